#!/bin/bash
#SBATCH --job-name=INAT_BASE         # job name
#SBATCH --ntasks=1                   # MPI tasks
#SBATCH --ntasks-per-node=1          # MPI tasks per node
#SBATCH --gres=gpu:1                 # GPUs per node
#SBATCH --cpus-per-task=10           # cores per task
#SBATCH --hint=nomultithread         # physical cores
#SBATCH --distribution=block:block   # contiguous cores
#SBATCH --time=35:00:00              # HH:MM:SS
#SBATCH --qos=qos_gpu-t4
#SBATCH --output=logs/%A_%a.out
#SBATCH --error=logs/%A_%a.err
#SBATCH --array=0

set -x

cd $WORK/transseg2d

module purge
module load pytorch-gpu/py3/1.8.0

srun python testslurm.py
