#!/bin/bash

#SBATCH --job-name vit_ddp
#SBATCH --chdir /home/upc/upc580327/lab2
#SBATCH --output reports/R-%x.%j.out
#SBATCH --error reports/R-%x.%j.err
#SBATCH --nodes 4                   # number of nodes
#SBATCH --ntasks-per-node 1         # torchrun is one Slurm task per node
#SBATCH --gres gpu:4                # GPUs per node
#SBATCH --cpus-per-task 80          # in MN5: number of GPUs * 20
#SBATCH --time 01:29:59             # mandatory on MN5
#SBATCH --account bsc98
#SBATCH --qos acc_bsccs
#SBATCH --exclusive

echo "START TIME: $(date)"
set -eo pipefail

module purge
module load singularity
GPUS_PER_NODE=4

MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
MASTER_PORT=6000

LAUNCHER="torchrun \
    --nproc_per_node $GPUS_PER_NODE \
    --nnodes $SLURM_NNODES \
    --node_rank \$SLURM_PROCID \
    --rdzv_endpoint $MASTER_ADDR:$MASTER_PORT \
    --rdzv_backend c10d \
    --max_restarts 0 \
    "
PYTHON_FILE=/home/upc/upc580327/lab2/train_ddp.py
PYTHON_ARGS="--model_name vit \
    --dataset /home/upc/upc580327/lab2/tiny-224 \
    --num_epochs 5 \
    --batch_size 128 \
    --mixed_precision bf16 \
    "

export CMD="$LAUNCHER $PYTHON_FILE $PYTHON_ARGS"

SINGULARITY_CONTAINER=/gpfs/apps/MN5/ACC/SINGULARITY/SRC/images/nvidiaPytorch24.07
SINGULARITY_ARGS=" \
    --bind /home/upc/upc580327/lab2 \
    --nv \
    $SINGULARITY_CONTAINER \
    "

SRUN_ARGS=" \
    --cpus-per-task $SLURM_CPUS_PER_TASK \
    --jobid $SLURM_JOB_ID \
    "

# bash -c delays the interpolation of the escaped variables to each task
srun $SRUN_ARGS singularity exec $SINGULARITY_ARGS bash -c "$CMD"

echo "END TIME: $(date)"
