#!/bin/bash -l

#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=12
#SBATCH --constraint=gpu
#SBATCH --partition=normal
#SBATCH --time=01:00:00
#SBATCH --account=g34
#SBATCH --output=slurm_output.txt
#SBATCH --error=slurm_error.txt

module load daint-gpu PyTorch

export MASTER_ADDR=$(hostname)
export MASTER_PORT=1234

srun \
    python \
    ds_pp.py \
    --deepspeed_config ds_config.json \
    --steps 200
