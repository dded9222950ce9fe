#!/bin/bash
#PBS -S /bin/bash
#PBS -l walltime=4:00:00
#PBS -A datascience
cd $PBS_O_WORKDIR
export nodes=$(sed -n $= $PBS_NODEFILE)
source ./setup.sh
aprun -n $((nodes*4)) -N 4 python ./main.py +mpi.local_size=4 ++data.stage=/dev/shm +log.experiment_id=${PBS_JOBID} --config-name test_128x4x1_tfr
