#!/bin/bash
#FLUX: -N 1
#FLUX: -t 30
#FLUX: -q pdebug
#FLUX: --setattr=gpumode=TPX

# TPX mode: each MI300A shows 3 partitions, 12 devices on the node (Tuolumne)
source /usr/workspace/$USER/venvs/torch/bin/activate
flux run -N 1 -n 12 -g 1 python bench_ddp.py --steps 200
