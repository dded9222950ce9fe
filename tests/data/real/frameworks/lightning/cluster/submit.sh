#!/bin/bash -l

# SLURM SUBMIT SCRIPT
#SBATCH --nodes=4
#SBATCH --gres=gpu:8
#SBATCH --ntasks-per-node=8
#SBATCH --mem=0
#SBATCH --time=0-02:00:00
#SBATCH --signal=SIGUSR1@90
#SBATCH --requeue
#SBATCH --partition=gpu
#SBATCH --account=vision-lab
#SBATCH --output=resnet50-%j.out

# activate conda env
conda activate ptl-2.2

# debugging flags (optional)
export NCCL_DEBUG=INFO
export PYTHONFAULTHANDLER=1

# on your cluster you might need these:
# set the network interface
# export NCCL_SOCKET_IFNAME=^docker0,lo

# might need the latest CUDA
# module load NCCL/2.4.7-1-cuda.10.0

# run script from above; Lightning's SLURMEnvironment expects one task per GPU
srun python3 train.py --max_epochs 30 --data_dir /datasets/imagenet
