#!/bin/bash
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=1
#SBATCH --gpus-per-node=1
#SBATCH --mem-per-cpu=8G
#SBATCH --time=0-03:00
module load python/3.8 cuda/11.0
source ~/ENV/bin/activate
python train.py
