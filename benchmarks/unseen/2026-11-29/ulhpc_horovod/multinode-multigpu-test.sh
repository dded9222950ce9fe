#!/bin/sh -l
#SBATCH -c 2              # 2 cores per process
#SBATCH -N 2              # 2 nodes
#SBATCH -p gpu
#SBATCH --gpus-per-node 4 # one GPU per process
#SBATCH -t 30
#SBATCH --export=ALL

module load lang/Python
source ~/venv/horovod/bin/activate

mpirun -n 8 python test_horovod.py
