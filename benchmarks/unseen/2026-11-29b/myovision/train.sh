#!/bin/bash
#SBATCH --job-name=multi-gpu-training
#SBATCH --partition=gpu
#SBATCH --nodes=1
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=32
#SBATCH --time=2-00:00:00

TORCH_DISTRIBUTED_DEBUG=INFO
singularity exec --pwd $(pwd) --nv \
  -B /myovision:/mnt \
  image.sif \
  bash -c "cd /mnt/myovision-sam && torchrun --standalone --nproc_per_node=gpu train.py"
