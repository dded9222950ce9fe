#!/bin/bash
#SBATCH -C gpu
#SBATCH -A ntrain4_g
#SBATCH -q debug
#SBATCH --nodes=2
#SBATCH --ntasks-per-node 4
#SBATCH --cpus-per-task 32
#SBATCH --gpus-per-task 1
#SBATCH --time=0:10:00
#SBATCH --image=romerojosh/containers:sc21_tutorial
#SBATCH -J pm-crop64
#SBATCH -o %x-%j.out

DATADIR=${SCRATCH}/nbody2hydro/datacopies
LOGDIR=${SCRATCH}/sc22-dl-tutorial/logs
mkdir -p ${LOGDIR}

hostname

set -x
srun -u shifter -V ${DATADIR}:/data -V ${LOGDIR}:/logs \
    bash -c "
    source export_DDP_vars.sh
    python train.py --config=short
    "
