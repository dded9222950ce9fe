#!/bin/bash
#SBATCH -N 1 --gpus-per-node=4
ARGS=(--epochs 3)
if [[ -n "$DEBUG" ]]; then
  echo debugging
fi
case "$MODE" in
  fast) LR=0.1 ;;
  *) LR=0.01 ;;
esac
torchrun --standalone --nproc-per-node=4 -m mypkg.train --lr $LR
