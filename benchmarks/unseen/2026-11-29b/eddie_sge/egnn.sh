#!/bin/bash

# Grid Engine options (lines prefixed with #$)
#$ -N egnn
# Runtime limit of 20 minutes:
#$ -l h_rt=00:20:00
# Run in the directory the job was submitted from:
#$ -cwd
# One GPU in the gpu queue:
#$ -q gpu
#$ -pe gpu-a100 1
# System RAM per GPU:
#$ -l h_vmem=4G

. /etc/profile.d/modules.sh
module load cuda

python main.py --epochs 50
