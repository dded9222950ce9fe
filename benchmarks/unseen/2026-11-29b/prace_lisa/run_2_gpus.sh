#!/bin/bash
#SBATCH -n 2
#SBATCH --ntasks-per-node=2
#SBATCH -c 3
#SBATCH -t 0:10:00
#SBATCH -p gpu_shared
#SBATCH --gres=gpu:gtx1080ti:2

echo "Training on two GPUs of one node"

# horovodrun wants host:slots pairs
HOSTS=$(scontrol show hostname $SLURM_JOB_NODELIST | sed -z 's/\n/:2,/g')
HOSTS=${HOSTS%?}
echo $HOSTS

horovodrun -np 2 -H $HOSTS python cifar10_horovod.py --epochs 5
