#!/bin/bash
# TACC ml.md form: one task per node starts torchrun; the master host and node count are arguments
HOST=$1
NODES=$2
LOCAL_RANK=${PMI_RANK}
torchrun --nproc_per_node=3 \
    --nnodes=$NODES \
    --node_rank=${LOCAL_RANK} \
    --master_addr=$HOST \
    train.py --epochs 4
