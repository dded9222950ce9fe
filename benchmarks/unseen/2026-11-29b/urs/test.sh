#! /bin/bash
#SBATCH -p rtx2080
#SBATCH -N 1
#SBATCH --gres=gpu:2
#SBATCH -J urs

python -m torch.distributed.launch  --nproc_per_node=2 main.py --dataset ml-1m --model sasrec
