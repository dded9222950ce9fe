#!/bin/bash
#flux: -N 2
#flux: -t 60m
#flux: -q pbatch
#flux: --exclusive
#flux: --output=train.{{id}}.out

module load rocm/6.4.1
source /p/lustre5/$USER/elcap-venvs/torch-rocm64/bin/activate
export NCCL_NET_GDR_LEVEL=3 NCCL_MIN_NCHANNELS=24
export FI_CXI_RDZV_PROTO=alt_read
export MASTER_ADDR=$(flux hostlist local | /bin/hostlist -n 1) MASTER_PORT=23456

flux run -N2 -n8 --exclusive --gpus-per-task=1 -ofastload=on --setattr=rdzv_get_en=0 -u -onosetpgrp \
    python -u train.py --model vit_b_16 --epochs 30
