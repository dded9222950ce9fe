#!/bin/bash
# submit the PBS training job: size, time, queue and the job's variables are chosen here
qsub -l select=2:ncpus=64:ngpus=4 \
  -l walltime=02:00:00 \
  -q workq \
  -A ml-proj \
  -v EPOCHS=30,DATA=/data/imagenet \
  -j oe \
  train_ddp.pbs
