#!/bin/bash
#SBATCH -C gpu
#SBATCH -N 2
#SBATCH --ntasks-per-node 8
#SBATCH --gpus-per-task 1
#SBATCH -c 10
#SBATCH -q regular
#SBATCH -t 4:00:00
#SBATCH -J gnn-train

. scripts/setup.sh
args=$@
srun -l python ./train.py -d --rank-gpu $args
