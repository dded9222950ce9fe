#!/bin/bash

# To run the samples:
#   bash run_example.sh {file_to_run.py} {num_gpus}
# file_to_run.py: the example to launch (default tensor_parallel_example.py)
# num_gpus: local GPUs to use, at least 2 (default 4)

echo "Launching ${1:-tensor_parallel_example.py} with ${2:-4} gpus"
torchrun --nnodes=1 --nproc_per_node=${2:-4} --rdzv_id=101 --rdzv_endpoint="localhost:5972" ${1:-tensor_parallel_example.py}
