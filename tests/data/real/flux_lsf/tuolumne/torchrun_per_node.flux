#!/bin/bash
# flux: -N 4
# flux: -t 4h
# flux: -q pbatch
# flux: --bank=llmtune

# Flux runs this batch script from a per-job /var/tmp directory on this system
cd /usr/workspace/$USER/tuolumne/llm-finetune
source venv-rocm/bin/activate

MASTER_ADDR=$(flux hostlist -l -n 0)
flux run -N 4 -n 4 -o fastload=on torchrun --nnodes 4 --nproc_per_node 4 \
    --rdzv_backend c10d --rdzv_endpoint $MASTER_ADDR:29500 \
    finetune.py --config configs/llama3_8b.yaml
