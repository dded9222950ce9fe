#!/bin/bash
#SBATCH --job-name=finetune-zero3
#SBATCH -D .
#SBATCH -A bsc88
#SBATCH --qos=acc_bscls
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=80
#SBATCH --gres=gpu:4
#SBATCH --time=2-00:00:00
#SBATCH --output=logs/finetune_%j.out
#SBATCH --error=logs/finetune_%j.err

module load singularity/3.11.5 || true
module load cuda/12.1 nccl/2.19.4 mkl/2024.0 python/3.11.5

source /gpfs/projects/bsc88/envs/ft/bin/activate

export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
export MASTER_PORT=29501
export OUTPUT_DIR=/gpfs/scratch/bsc88/$USER/salamandra-ft
export HF_HOME=/gpfs/projects/bsc88/hf_cache

# one torchrun per node; the node rank is each task's own SLURM_NODEID (single quotes)
srun --cpu-bind=none bash -c 'torchrun \
    --nnodes=$SLURM_NNODES --node_rank=$SLURM_NODEID --nproc_per_node=4 \
    --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT \
    finetune.py \
    --model_name_or_path /gpfs/projects/bsc88/models/salamandra-7b \
    --deepspeed ds_zero3.json \
    --bf16 True \
    --output_dir $OUTPUT_DIR'
