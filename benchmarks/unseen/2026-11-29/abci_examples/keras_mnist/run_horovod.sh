#!/bin/sh
#$ -l rt_F=4
#$ -l h_rt=1:00:00
#$ -N keras_mnist_hvd
#$ -cwd

source /etc/profile.d/modules.sh
EXAMPLES=$HOME/abci-examples
source $EXAMPLES/load_modules.sh
source $EXAMPLES/horovod/bin/activate

mpiexec -n 16 -map-by ppr:4:node python3 $EXAMPLES/keras_mnist/mnist.py
