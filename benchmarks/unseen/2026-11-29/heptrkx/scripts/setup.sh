module load pytorch/v1.6.0-gpu
export OMP_NUM_THREADS=10
