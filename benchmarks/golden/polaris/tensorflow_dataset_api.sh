#!/bin/bash -l
#PBS -l select=1
#PBS -l walltime=00:20:00
#PBS -l filesystems=eagle:home
#PBS -q alcf_training
#PBS -A alcf_training

cd $PBS_O_WORKDIR

echo [$SECONDS] setup conda environment
module use /soft/modulefiles
module load conda
conda activate

echo [$SECONDS] python = $(which python)
echo [$SECONDS] python version = $(python --version)

echo [$SECONDS] setup local env vars
NODES=`cat $PBS_NODEFILE | wc -l`
GPUS_PER_NODE=4
RANKS=$((NODES * GPUS_PER_NODE))
echo NODES=$NODES  GPUS_PER_NODE=$GPUS_PER_NODE  RANKS=$RANKS

export OMP_NUM_THREADS=1
echo [$SECONDS] run example with $OMP_NUM_THREADS threads
mpiexec -n $RANKS --ppn $GPUS_PER_NODE --depth=$OMP_NUM_THREADS --cpu-bind depth --env OMP_NUM_THREADS=$OMP_NUM_THREADS -env OMP_PLACES=threads \
   python ilsvrc_dataset.py -c ilsvrc.json --interop $OMP_NUM_THREADS --intraop $OMP_NUM_THREADS \
       --logdir logdir

export OMP_NUM_THREADS=16
echo [$SECONDS] run example with $OMP_NUM_THREADS threads
mpiexec -n $RANKS --ppn $GPUS_PER_NODE --depth=$OMP_NUM_THREADS --cpu-bind depth --env OMP_NUM_THREADS=$OMP_NUM_THREADS -env OMP_PLACES=threads \
   python ilsvrc_dataset.py -c ilsvrc.json --interop $OMP_NUM_THREADS --intraop $OMP_NUM_THREADS \
       --logdir logdir

export OMP_NUM_THREADS=64
echo [$SECONDS] run example with $OMP_NUM_THREADS threads
mpiexec -n $RANKS --ppn $GPUS_PER_NODE --depth=$OMP_NUM_THREADS --cpu-bind depth --env OMP_NUM_THREADS=$OMP_NUM_THREADS -env OMP_PLACES=threads \
   python ilsvrc_dataset.py -c ilsvrc.json --interop $OMP_NUM_THREADS --intraop $OMP_NUM_THREADS \
       --logdir logdir

echo [$SECONDS] done
