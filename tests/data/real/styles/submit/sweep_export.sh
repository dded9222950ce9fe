#!/bin/bash
# one training job for the config given (default: the base config); the job reads CONFIG_FILE
CONFIG_PATH=${1:-configs/base.yaml}
echo "Submitting job for $CONFIG_PATH..."
sbatch --export=ALL,CONFIG_FILE="$CONFIG_PATH" --nodes=2 --job-name=sweep train_cfg.sbatch
