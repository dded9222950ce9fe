#!/usr/bin/env bash

#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --output=hvd-%j.out
#SBATCH --error=hvd-%j.err
#SBATCH --time=00:05:00
#SBATCH --partition=dc-gpu
#SBATCH --gres=gpu:4

#SBATCH --account=training2306

source /p/project/training2306/software_environment/activate.sh

# every rank sees the node's four GPUs and picks one by its local rank
export CUDA_VISIBLE_DEVICES="0,1,2,3"

# srun starts one Horovod process per task
srun --cpu-bind=none python exercise2.py
