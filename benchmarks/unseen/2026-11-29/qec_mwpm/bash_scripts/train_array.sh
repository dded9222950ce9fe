#!/usr/bin/env bash
#SBATCH -A NAISS2023-5-353 -p alvis
#SBATCH -t 3-00:00:00
#SBATCH -J mwpm_training
#SBATCH -o ../../alvis_out/mwpm_training_%A_%a.out
#SBATCH --cpus-per-task=1
#SBATCH --gpus-per-node=A40:1
#SBATCH --array=0-11

module purge
apptainer exec ~/conda-cont.sif python ../scripts/train.py -c ../configs/array_configs/config_${SLURM_ARRAY_TASK_ID}.yaml --save
