#!/bin/bash
# Run the single-node DDP tutorial on every GPU of this machine:  bash run_multigpu.sh
set -e

cd "$(dirname "$0")"
export OMP_NUM_THREADS=4

echo "GPUs visible: $(nvidia-smi -L | wc -l)"
time torchrun --standalone --nproc_per_node=gpu multigpu_torchrun.py 50 10
