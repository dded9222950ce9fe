#! /bin/bash
#SBATCH -J cli_multi_node_multi_gpu
#SBATCH -o cli_multi_node_multi_gpu.out
#SBATCH --time=00:30:00
#SBATCH --partition=gpu-a100
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --gres=gpu:A100:4
#SBATCH --mem-per-cpu=1G
#SBATCH --cpus-per-task=4

conda activate pytorch_test

srun pythpc --config examples/fit/multi_node_multi_gpu.yaml fit
