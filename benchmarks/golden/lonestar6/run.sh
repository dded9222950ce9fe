#!/bin/bash
HOST=$1
NODES=$2
LOCAL_RANK=${PMI_RANK}
torchrun --nproc_per_node=3  --nnodes=$NODES --node_rank=${LOCAL_RANK} --master_addr=$HOST \
   	examples/distributed/ddp-tutorial-series/multinode.py 50 10
