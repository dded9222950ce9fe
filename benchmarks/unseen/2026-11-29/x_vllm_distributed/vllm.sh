#!/bin/bash
# the Ray cluster is up first: `make head` here and `make worker` on the other machine
uv run vllm serve Qwen/Qwen3-0.6B \
    --distributed-executor-backend ray \
    --tensor-parallel-size 1 \
    --pipeline-parallel-size 2
