#!/bin/bash
# fine-tune OPT with Colossal-AI's launcher on the GPUs of this machine
BS=72
colossalai run --nproc_per_node 4 \
    --master_port 29600 \
    run_clm_colossalai.py \
    --dataset_name wikitext \
    --dataset_config_name wikitext-2-raw-v1 \
    --model_name_or_path facebook/opt-1.3b \
    --output_dir /tmp/test-clm \
    --per_device_train_batch_size ${BS} 2>&1 | tee ./logs/colo_bs_${BS}.log
