#!/bin/bash
#$ -l rt_F=2
#$ -l h_rt=2:00:00
#$ -N ddp_resnet
#$ -j y
#$ -cwd

source /etc/profile.d/modules.sh
module load cuda/11.8/11.8.0 cudnn/8.9/8.9.2 nccl/2.16/2.16.2-1 hpcx/2.12
source ~/venv/pytorch/bin/activate

# 4 V100 per node: one rank per GPU
mpirun -npernode 4 -np 8 python train.py --epochs 10 --batch-size 64
