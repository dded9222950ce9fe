#!/bin/bash
#SBATCH --time=00:30:00
#SBATCH --job-name=vit_clouds
#SBATCH --output=%x_%A.out
#SBATCH --error=%x_%A.err
#SBATCH --partition=gpu
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=32
#SBATCH --mem=200G

module load python/anaconda-2022.05
cd /project/earth/vit_clouds

conda run -n vit --no-capture-output \
    torchrun --standalone --nproc_per_node=4 torchrun_test.py --patch 16 --epochs 2
