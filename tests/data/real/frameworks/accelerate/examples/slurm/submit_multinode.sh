#!/bin/bash

#SBATCH --job-name=nlp-multinode
#SBATCH -D .
#SBATCH --output=O-%x.%j
#SBATCH --error=E-%x.%j
#SBATCH --nodes=2                   # number of nodes
#SBATCH --ntasks-per-node=1         # one accelerate launcher per node
#SBATCH --gres=gpu:8                # number of GPUs per node
#SBATCH --cpus-per-task=96          # cores for the launcher and its workers
#SBATCH --time=02:30:00             # maximum execution time (HH:MM:SS)
#SBATCH --partition=a100

######################
### Set environment ###
######################
source activate_env.sh
export GPUS_PER_NODE=8
######################

######################
#### Set network #####
######################
head_node_ip=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
######################

export LAUNCHER="accelerate launch \
    --num_processes $((SLURM_NNODES * GPUS_PER_NODE)) \
    --num_machines $SLURM_NNODES \
    --rdzv_backend c10d \
    --main_process_ip $head_node_ip \
    --main_process_port 29500 \
    "
export SCRIPT="/workspace/accelerate/examples/complete_nlp_example.py"
export SCRIPT_ARGS=" \
    --mixed_precision bf16 \
    --with_tracking \
    --output_dir /workspace/accelerate/examples/output \
    "

# accelerate launch does not like multi-line arguments: flatten them into one command
export CMD="$LAUNCHER $SCRIPT $SCRIPT_ARGS"
srun $CMD
