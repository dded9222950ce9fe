#!/bin/bash
#flux: --nodes=2
#flux: --time-limit=2h
#flux: --queue=pbatch
#flux: --job-name=elcap-gnn

export MASTER_ADDR=$(flux hostlist -l -n 0)
export MASTER_PORT=29500
flux run -N 2 --tasks-per-node=4 -o gpu-affinity=per-task python train_gnn.py --dataset ogbn-products
