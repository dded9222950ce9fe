#!/bin/bash
# Started on each node by pbsdsh: $1 GPUs in all, $2 master, $3 port, $4 node rank, $5 GPUs per node.
cd $PBS_O_WORKDIR
module load python3/3.11.0 cuda/12.3.2 nccl/2.19.4
source /g/data/cp23/venvs/det/bin/activate

python3 -m torch.distributed.run --nproc_per_node=$5 --nnodes=2 --node_rank=$4 \
    --master_addr=$2 --master_port=$3 \
    train_net.py --num-gpus $5 --config-file configs/lvis_r50.yaml
