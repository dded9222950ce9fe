#!/bin/bash
#SBATCH -J pm-crystal
#SBATCH -C gpu
#SBATCH --nodes 2
#SBATCH --ntasks-per-node 4
#SBATCH --gpus-per-task 1
#SBATCH --cpus-per-task 32
#SBATCH --time 04:00:00
#SBATCH -q regular
#SBATCH -A m3792_g
#SBATCH -o logs/slurm-%x-%j.out

# Setup software
module load pytorch/2.3.1
export NCCL_NET_GDR_LEVEL=PHB

config=configs/crystal_gnn.yaml
outdir=$SCRATCH/crystal/runs/$SLURM_JOB_ID

export MASTER_ADDR=$(hostname)
export MASTER_PORT=29507

set -x
# -l labels each line with the task id, -u keeps the output unbuffered
mkdir -p $outdir
srun -l -u nsys profile -o $outdir/prof_%q{SLURM_PROCID} --trace=cuda,nvtx python train.py -d --rank-gpu --ranks-per-node=${SLURM_NTASKS_PER_NODE} \
    --output-dir $outdir $config
