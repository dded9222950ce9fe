#!/bin/bash
# one torchrun per node; the first host is the rendezvous endpoint
export NCCL_DEBUG=WARN
torchrun --nnodes 2 --nproc_per_node 8 \
  --rdzv_backend c10d --rdzv_id 4242 --rdzv_endpoint node01:29500 \
  train.py --job.config_file ./train_configs/llama3_8b.toml
