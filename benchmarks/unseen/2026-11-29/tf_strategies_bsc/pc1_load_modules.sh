module purge
module load gcc/8.3.0 cuda/10.2 cudnn/7.6.4 nccl/2.4.8 openmpi/4.0.1 python/3.7.4_ML
