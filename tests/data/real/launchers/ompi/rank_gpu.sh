#!/bin/bash
# Open MPI and MVAPICH name the local rank differently
lrank=${OMPI_COMM_WORLD_LOCAL_RANK:-$MV2_COMM_WORLD_LOCAL_RANK}
export CUDA_VISIBLE_DEVICES=$lrank
exec $*
