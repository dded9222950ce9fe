#!/bin/bash
torchrun --nproc_per_node $SLURM_GPUS_ON_NODE -m fme.ace.train /configmount/config.yaml
