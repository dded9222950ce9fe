#!/bin/bash
#PBS -S /bin/bash
#PBS -l nodes=128:ppn=4
#PBS -l walltime=4:00:00
#PBS -A datascience
#PBS -q R329190
cd $PBS_O_WORKDIR
source ./setup.sh
aprun -n 512 -N 4 python train.py configs/test_polaris.yaml -d --mlperf --cache RAM
