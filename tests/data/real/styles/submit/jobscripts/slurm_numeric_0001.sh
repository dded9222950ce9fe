#!/bin/bash
#SBATCH --job-name=numeric_0001
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --gres=gpu:1
#SBATCH --time=06:00:00
#SBATCH --partition=batch

cd "$SLURM_SUBMIT_DIR"
python3 -u fit_numeric.py --config-number 0001 --output results/0001
