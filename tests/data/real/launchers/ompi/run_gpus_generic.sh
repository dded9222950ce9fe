#!/bin/bash
# Show each rank only the GPU that matches its local rank, then run the command.
if [[ -n "$OMPI_COMM_WORLD_NODE_RANK" ]]; then
    export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK
elif [[ -n "$MPI_LOCALRANKID" ]]; then
    export CUDA_VISIBLE_DEVICES=$MPI_LOCALRANKID
fi
"$@"
