#!/bin/sh

#PJM -g gk00
#PJM --fs /work
#PJM -j
#PJM --norestart
#PJM -L rscgrp=regular-a
#PJM -L node=2
#PJM -L elapse=0:30:00
#PJM -L jobenv=singularity
#PJM --mpi proc=16

module load nvidia/22.7 ompi/4.1.4
mpirun -np ${PJM_MPI_PROC} -machinefile ${PJM_O_NODEINF} \
  -map-by ppr:8:node -mca pml ob1 --mca btl self,tcp \
  ./run.sh
