#!/bin/bash
#SBATCH --account=project_2004846
#SBATCH --partition=gpumedium
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=32
#SBATCH --mem=0
#SBATCH --time=2:00:00
#SBATCH --gres=gpu:a100:4,nvme:200

module purge
module load pytorch/2.5

export DATADIR=/scratch/project_2004846/data
export TORCH_HOME=/scratch/project_2004846/torch-cache
# unpack the dataset on the node-local NVMe of every node
srun --ntasks-per-node=1 tar xf $DATADIR/imagenet-train.tar -C $LOCAL_SCRATCH

set -xv
srun python3 benchmark_deepspeed.py --data $LOCAL_SCRATCH/train --epochs=5 \
    --deepspeed --deepspeed_config ds_config.json
