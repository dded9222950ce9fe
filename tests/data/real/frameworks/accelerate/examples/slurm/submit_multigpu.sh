#!/bin/bash

#SBATCH --job-name=multigpu
#SBATCH -D .
#SBATCH --output=O-%x.%j
#SBATCH --error=E-%x.%j
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1         # accelerate forks one worker per GPU itself
#SBATCH --gres=gpu:4                # number of GPUs per node
#SBATCH --cpus-per-task=32
#SBATCH --time=00:45:00
#SBATCH --account=YOUR_ACCOUNT

######################
### Set environment ###
######################
source activate_env.sh
export GPUS_PER_NODE=4
######################

export SCRIPT="examples/nlp_example.py"
export SCRIPT_ARGS=" \
    --mixed_precision fp16 \
    "

export CMD="accelerate launch --multi_gpu --num_processes $GPUS_PER_NODE $SCRIPT $SCRIPT_ARGS"
echo "Running: $CMD"
srun $CMD
