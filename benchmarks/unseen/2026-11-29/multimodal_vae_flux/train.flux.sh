#!/bin/bash
#FLUX: --job-name=mmvae-train
#FLUX: -N 1
#FLUX: -n 1
#FLUX: -c=10
#FLUX: -g 1
#FLUX: -t=28800s
#FLUX: --queue=pbatch
#FLUX: --urgency=16

nvidia-smi
python -u run_train.py -opts opts.yaml
