#!/bin/bash
#SBATCH --job-name=pl_ddp_test
#SBATCH --nodes=2                     # number of nodes
#SBATCH --ntasks-per-node=1           # one process per node, one GPU each
#SBATCH --cpus-per-task=3             # dataloader workers
#SBATCH --gres=gpu:1                  # one GPU per node
#SBATCH --time=00:10:00
#SBATCH --partition=gpu-preempt
#SBATCH -o script.out
#SBATCH --open-mode=append

export PYTHONUNBUFFERED=1
echo "job starting on $(date) on $SLURM_NODELIST in $(pwd)"

# every task runs the executable Lightning script itself
srun script.py
