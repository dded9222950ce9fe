#!/bin/bash
INDEX=$1
WORKERS=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | awk '{printf "%s\"%s:2222\"", (NR>1?",":""), $1}')
export TF_CONFIG="{\"cluster\": {\"worker\": [$WORKERS]}, \"task\": {\"type\": \"worker\", \"index\": $INDEX}}"
python3 tf_multiworker.py --epochs 3
