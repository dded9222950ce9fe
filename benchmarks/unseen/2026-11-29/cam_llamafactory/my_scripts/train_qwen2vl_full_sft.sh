#!/bin/bash
#SBATCH -J qwen2vl-7B_full_sft
#SBATCH -A BYRNE-SL2-GPU
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --gres=gpu:4
#SBATCH --time=24:00:00
#SBATCH --mail-type=BEGIN,END,FAIL
#SBATCH -p ampere
. /etc/profile.d/modules.sh
module load rhel8/default-amp
source ~/venvs/llamafactory/bin/activate
which python

FORCE_TORCHRUN=1 llamafactory-cli train my_configs/qwen2vl_7b_full_sft.yaml
