#!/bin/bash

#SBATCH -J tf-distributed      # Job name
#SBATCH -o tf-distributed.o%j  # Name of stdout output file
#SBATCH -e tf-distributed.e%j  # Name of stderr error file
#SBATCH -p rtx                 # Queue (partition) name
#SBATCH -N 3                   # Total # of nodes
#SBATCH -n 3                   # Total # of tasks
#SBATCH -t 00:30:00            # Run time (hh:mm:ss)

# one TensorFlow worker per node; the argument is the worker's index in TF_CONFIG
ibrun -n 1 -o 0 ./job_tensorflow_distributed.sh 0 &
ibrun -n 1 -o 1 ./job_tensorflow_distributed.sh 1 &
ibrun -n 1 -o 2 ./job_tensorflow_distributed.sh 2
wait
