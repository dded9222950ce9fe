#!/bin/zsh
#PJM -L rscgrp=regular-a
#PJM -L node=4
#PJM -L elapse=48:00:00
#PJM --mpi proc=8
#PJM -g gk77
#PJM -j
#PJM -N mem410m

source /usr/share/Modules/init/zsh
module load gcc/8.3.1
module load ompi/4.1.1

mpirun -machinefile $PJM_O_NODEINF -np $PJM_MPI_PROC -map-by node ./paralle.sh 8 32 64 1024 410m-deduped-v0
