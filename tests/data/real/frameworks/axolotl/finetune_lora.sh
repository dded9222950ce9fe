#!/bin/bash
# LoRA fine-tune of OpenLLaMA-3B on whatever GPUs this box has (accelerate's default config)
set -e
source .venv/bin/activate
export WANDB_PROJECT=openllama-lora

# preprocess once, then train
python -m axolotl.cli.preprocess examples/openllama-3b/lora.yml
accelerate launch -m axolotl.cli.train examples/openllama-3b/lora.yml
