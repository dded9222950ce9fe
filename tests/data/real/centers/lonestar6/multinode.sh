#!/bin/bash
# one copy per node, started by mpirun --map-by ppr:1:node
MASTER=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
source .venv/bin/activate
accelerate launch \
    --num_machines 2 \
    --num_processes 6 \
    --machine_rank $OMPI_COMM_WORLD_RANK \
    --main_process_ip $MASTER \
    --main_process_port 29500 \
    ./finetune.py --epochs 3
