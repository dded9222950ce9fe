#!/bin/bash -l
#SBATCH --job-name=chess_finetune  # create a short name for your job
#SBATCH --output=%x-%j_%n.out      # file to write stdout
#SBATCH --nodes=1                  # node count
#SBATCH --ntasks=1                 # total number of tasks across all nodes
#SBATCH --cpus-per-task=4          # cpu-cores per task (>1 if multi-threaded tasks)
#SBATCH --mem=256G                 # cpu memory per node
#SBATCH --gres=gpu:4               # number of gpus per node
#SBATCH --time=01:00:00            # total run time limit (HH:MM:SS)
#SBATCH --constraint=gpu80         # run job on specific node types

# Override the defaults with e.g. `TOTAL_BATCH_SIZE=128 sbatch chess_finetune.sh`
total_batch_size=${TOTAL_BATCH_SIZE:-64}
batch_size_per_device=${BATCH_SIZE_PER_DEVICE:-1}

module purge
module load anaconda3/2024.6
conda activate chess-env

# Read CUDA_VISIBLE_DEVICES to detect the number of GPUs
num_gpus=$(jq -n "[$CUDA_VISIBLE_DEVICES] | length")

torchrun \
    --nnodes=${SLURM_NNODES} \
    --nproc-per-node=$num_gpus \
    chess_finetune.py \
        --total_batch_size $total_batch_size \
        --batch_size_per_device $batch_size_per_device \
        --sharding_strategy FULL_SHARD
