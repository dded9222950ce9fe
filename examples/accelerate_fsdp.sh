#!/bin/bash
# Hugging Face Accelerate with FSDP on one node with 4 GPUs (no scheduler: run it on the node).
export HF_HOME=${HF_HOME:-$HOME/.cache/huggingface}
accelerate launch --num_machines 1 --num_processes 4 --mixed_precision bf16 \
    --use_fsdp --fsdp_sharding_strategy FULL_SHARD --fsdp_auto_wrap_policy TRANSFORMER_BASED_WRAP \
    run_clm.py --model_name_or_path gpt2 --dataset_name wikitext --output_dir out
