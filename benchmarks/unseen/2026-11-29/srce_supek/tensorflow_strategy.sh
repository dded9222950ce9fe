#PBS -q gpu
#PBS -l select=2:ngpus=1
#PBS -N tf-strategy

module load scientific/tensorflow

cd ${PBS_O_WORKDIR:-""}

run-multinode.sh tensorflow_strategy.py
