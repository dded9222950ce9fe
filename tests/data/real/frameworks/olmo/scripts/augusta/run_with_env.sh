#!/bin/bash
# Per-node wrapper started by srun: sets the node's environment, then one torchrun per node.

set -euxo pipefail

FIRST_HOST=$1
shift

NUM_NODES=$1
shift

source ~/venv/OLMo/bin/activate

cd ~/OLMo
HOST_NODE_ADDR=$FIRST_HOST:12345
export OMP_NUM_THREADS=16
#export NCCL_DEBUG=INFO

# prefix every line with the node name
export NODENAME=$(hostname -s)
exec > >(trap "" INT TERM; sed -u "s/^/$NODENAME out: /")
exec 2> >(trap "" INT TERM; sed -u "s/^/$NODENAME err: /" >&2)

torchrun --nproc_per_node=8 --nnodes=$NUM_NODES --rdzv-backend=c10d --rdzv-endpoint=$HOST_NODE_ADDR scripts/train.py "$@"
