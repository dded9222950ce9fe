#!/bin/bash
#SBATCH --nodes 2
#SBATCH --gres=gpu:a100:4       # 4 GPUs per node
#SBATCH --tasks-per-node=4      # one process per GPU, Lightning reads the SLURM variables
#SBATCH --cpus-per-task=8
#SBATCH --mem=64G
#SBATCH --time=0-12:00
#SBATCH --output=%N-%j.out
#SBATCH --account=rrg-mlab

module load python/3.11 cuda
source ~/envs/pl/bin/activate

# copy the data to the node-local disk before training
srun --ntasks-per-node=1 cp -r ~/projects/rrg-mlab/cifar10 $SLURM_TMPDIR/

export TORCH_NCCL_ASYNC_ERROR_HANDLING=1
srun python pl_trainer.py --batch_size 256 --max_epochs 5
