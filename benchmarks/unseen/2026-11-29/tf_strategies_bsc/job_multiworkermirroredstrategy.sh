#!/bin/bash
#SBATCH --job-name="tf_mwms"
#SBATCH --time=00-00:30:00
#SBATCH --workdir=.
#SBATCH --error=logs/mwms_%j_error.log
#SBATCH --output=logs/mwms_%j_output.log
#SBATCH --nodes=4
#SBATCH --ntasks=4
#SBATCH --cpus-per-task=160
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:4
#SBATCH --exclusive

source pc1_load_modules.sh

srun python3 tf_keras_multiworkermirroredstrategy.py "$@"
