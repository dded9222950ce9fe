#!/bin/bash
NNODES=$1
export VLLM_HOST_IP=$(hostname -I | awk '{print $2}')
ray start --node-ip-address=$VLLM_HOST_IP --head --port=6379
sleep 40
ray status
vllm serve /lustre/orion/stf007/proj-shared/models/llama-2-7b --tensor-parallel-size 8 --pipeline-parallel-size $NNODES --distributed-executor-backend ray --host 0.0.0.0 --port 8000
