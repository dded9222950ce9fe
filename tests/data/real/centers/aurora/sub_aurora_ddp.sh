#!/bin/bash -l
#PBS -N ddp_example
#PBS -l select=2
#PBS -l walltime=00:10:00
#PBS -l filesystems=home:flare
#PBS -A <project_name>
#PBS -q debug-scaling
#PBS -k doe
#PBS -j oe
cd ${PBS_O_WORKDIR}

# Load and list modules
module load frameworks
module list

echo "Jobid: $PBS_JOBID"
echo "Running on host `hostname`"
echo "Running on nodes `cat $PBS_NODEFILE`"
NODES=$(cat $PBS_NODEFILE | wc -l)
RANKS_PER_NODE=12
RANKS=$(( NODES * $RANKS_PER_NODE ))

export CCL_PROCESS_LAUNCHER=pmix
export CCL_ATL_TRANSPORT=mpi
export FI_MR_CACHE_MONITOR=userfaultfd

echo -e "Running DDP example with $NODES nodes, $RANKS ranks and $RANKS_PER_NODE ranks per node\n"
CPU_BIND_LIST="1:8:16:24:32:40:53:60:68:76:84:92"
mpirun -n $RANKS --ppn $RANKS_PER_NODE --cpu-bind=list:${CPU_BIND_LIST} python torch_ddp.py --steps 200
