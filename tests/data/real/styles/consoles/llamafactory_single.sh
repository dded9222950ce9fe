#!/bin/bash
# LoRA fine-tuning on one GPU
CUDA_VISIBLE_DEVICES=0 llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml
