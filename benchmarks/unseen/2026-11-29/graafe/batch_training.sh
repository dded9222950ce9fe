#!/bin/bash
#SBATCH -A GrM_GRAPHHPC            # project
#SBATCH -p boost_usr_prod          # partition (Leonardo user guide)
#SBATCH --time 10:00:00            # HH:MM:SS
#SBATCH -N 1                       # nodes
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:1               # 1 of the 4 GPUs
#SBATCH -e slurm/error/%j.err
#SBATCH -o slurm/output/%j.out

module load python/3.11.6--gcc--8.5.0
source $WORK/envs/gnn/bin/activate
python test_new_model.py 4 lr001_BN_DR50
