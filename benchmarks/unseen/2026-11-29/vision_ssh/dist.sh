#!/bin/bash -l
#PBS -l select=2:system=polaris
#PBS -l place=scatter
#PBS -l walltime=01:00:00
#PBS -l filesystems=home:eagle
#PBS -q debug
#PBS -A <project>

# the node list, one line per node
mapfile -t NODES < $PBS_NODEFILE
printf '%s\n' "${NODES[@]}"

for((rank=0;rank<${#NODES[*]};rank++));
do
    ssh ${NODES[rank]} "CUDA_VISIBLE_DEVICES=0,1,2,3 \
    torchrun \
    --nproc_per_node=4 \
    --nnodes=${#NODES[*]} \
    --node_rank=$rank \
    --master_addr=${NODES[0]} \
    --master_port=22345 \
    ~/cs/vision/general/master.py --config-name $1" &
done
wait
