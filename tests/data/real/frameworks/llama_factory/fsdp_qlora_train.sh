#!/bin/bash
# FSDP + QLoRA across two GPUs; the accelerate config fixes num_processes=2

CUDA_VISIBLE_DEVICES=0,1 accelerate launch \
    --config_file examples/accelerate/fsdp_config.yaml \
    src/train.py examples/extras/fsdp_qlora/llama3_lora_sft.yaml
