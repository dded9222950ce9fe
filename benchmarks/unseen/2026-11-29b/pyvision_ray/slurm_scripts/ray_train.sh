#!/bin/bash
#SBATCH --job-name=ray-job
#SBATCH --nodes=1
#SBATCH --cpus-per-task=1
#SBATCH --gpus-per-task=0
#SBATCH --ntasks-per-node=1
#SBATCH --no-requeue
#SBATCH --partition=eaigc1_t
#SBATCH --time=1200

set -xe
head_node_ip=10.140.60.106

# the job only submits: the training runs on the Ray cluster already up at head_node_ip
RAY_ADDRESS="http://${head_node_ip}:8265" ray job submit --working-dir . -- bash slurm_scripts/run_train_single_node.sh
