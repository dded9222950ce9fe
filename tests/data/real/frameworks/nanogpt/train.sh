#!/bin/bash
# GPT-2 (124M) reproduction on one 8xA100 node. Run on the node:  bash train.sh
set -euo pipefail

source ~/venvs/nanogpt/bin/activate
export OMP_NUM_THREADS=8
export WANDB_MODE=offline

mkdir -p out
echo "[$(date)] starting on $(hostname)"
torchrun --standalone --nproc_per_node=8 train.py config/train_gpt2.py --batch_size=12 --compile=False --out_dir=out/gpt2-124m
echo "[$(date)] done"
