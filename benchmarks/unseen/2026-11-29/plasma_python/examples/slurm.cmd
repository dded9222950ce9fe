#!/bin/bash
#SBATCH -t 05:00:00
#SBATCH -N 2
#SBATCH --ntasks-per-node=4
#SBATCH --ntasks-per-socket=2
#SBATCH --gres=gpu:4
#SBATCH -c 4
#SBATCH --mem-per-cpu=0

module load anaconda3
conda activate frnn
module load cudatoolkit cudnn openmpi/cuda-8.0/intel-17.0/2.1.0/64

srun python mpi_learn.py
