#!/bin/sh
#PBS -q rt_HF
#PBS -l select=2
#PBS -l walltime=24:00:00
#PBS -P gcb50456
#PBS -N clip_2nodes
#PBS -j oe

cd ${PBS_O_WORKDIR}

source /etc/profile.d/modules.sh
module load cuda/12.6/12.6.1
module load hpcx/2.20
. .venv/bin/activate

MASTER_ADDR=$(head -n 1 $PBS_NODEFILE)
NNODES=$(sort -u $PBS_NODEFILE | wc -l)

# one torchrun per node through HPC-X's mpirun (the host file is $PBS_NODEFILE)
mpirun -np $NNODES -map-by ppr:1:node -hostfile $PBS_NODEFILE -x PATH -x LD_LIBRARY_PATH \
    torchrun --nnodes $NNODES --nproc_per_node 8 \
    --rdzv_backend c10d --rdzv_endpoint $MASTER_ADDR:29500 \
    -m open_clip_train.main --model ViT-B-32 --batch-size 320 --epochs 32 --precision amp
