#!/bin/bash
# started once per node by mpirun; every node runs one torchrun with one GPU
HEAD=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
torchrun --nproc_per_node=1 --nnodes=$SLURM_NNODES --node_rank=$OMPI_COMM_WORLD_RANK \
    --master_addr=$HEAD --master_port=12355 \
    main.py --config configs/unet_era5.yaml --max-epochs 40
