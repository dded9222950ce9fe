#!/bin/bash
#SBATCH -J babylm
#SBATCH -A BUTTERY-SL2-GPU
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --gres=gpu:1
#SBATCH --time=12:00:00
#SBATCH -p ampere

# the experiment's overrides come from the submit line: sbatch run_hpc_expt.sh experiment.name=base
head_node_ip=$(hostname --ip-address)
port_number=$(( RANDOM % 1000 + 29000 ))

srun torchrun \
--nnodes 1 \
--nproc_per_node 1 \
--rdzv_id $RANDOM \
--rdzv_backend c10d \
--rdzv_endpoint $head_node_ip:$port_number \
train.py $@
