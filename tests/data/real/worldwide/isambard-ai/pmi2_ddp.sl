#!/bin/bash

#SBATCH --job-name        ddp_gh200
#SBATCH --nodes           2
#SBATCH --ntasks-per-node 4           # one task per GPU
#SBATCH --gpus            8
#SBATCH --time            03:00:00
#SBATCH --output          slog/%j.out

source /lus/lfs1aip2/scratch/u5ab/jdoe.u5ab/torch_dis/torch_env/bin/activate
module load brics/nccl

export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
export MASTER_PORT=29500

# Run one rank per GPU with srun
srun -N ${SLURM_NNODES} \
    --gpus=${SLURM_GPUS} \
    --mpi=pmi2 \
    --ntasks-per-node=${SLURM_NTASKS_PER_NODE} \
    bash -c 'export WORLD_SIZE=$SLURM_GPUS; export RANK=$PMI_RANK; export LOCAL_RANK=$SLURM_LOCALID; python3 train_ddp.py --epochs 20 --batch-size 256'
