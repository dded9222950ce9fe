#!/bin/bash
# Bind each local rank to one GPU tile of an Aurora node (12 tiles: 6 GPUs x 2 tiles).
num_gpu=6
num_tile=2
gpu_id=$(((PALS_LOCAL_RANKID / num_tile) % num_gpu))
tile_id=$((PALS_LOCAL_RANKID % num_tile))
unset EnableWalkerPartition
export ZE_ENABLE_PCI_ID_DEVICE_ORDER=1
export ZE_AFFINITY_MASK=$gpu_id.$tile_id
exec "$@"
