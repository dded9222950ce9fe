#!/bin/bash
# run once per node by mpirun: NNODES PROC_PER_NODE MASTER_ADDR
. /g/data/ab12/venvs/torch/bin/activate

torchrun --nnodes=${1} --nproc_per_node=${2} --rdzv_id=100 --rdzv_backend=c10d \
    --rdzv_endpoint=${3}:29400 src/train_unet.py --epochs 50 --amp
