module load python/3.6/3.6.5 cuda/10.0/10.0.130.1 cudnn/7.6/7.6.2 nccl/2.4/2.4.8-1 openmpi/2.1.6
