#!/bin/env bash
#SBATCH -A NAISS2024-22-1202
#SBATCH -p alvis
#SBATCH -t 00:30:00
#SBATCH --gpus-per-node=A40:4
#SBATCH -J "SNMG TensorFlow"

# Set-up environment
module purge
ml TensorFlow/2.11.0-foss-2022a-CUDA-11.7.0

# One process, every visible GPU
python mirrored_strategy.py --epochs 5
