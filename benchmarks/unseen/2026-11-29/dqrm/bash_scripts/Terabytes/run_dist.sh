#!/bin/bash
# usage: run_dist.sh -np N -ppn P -f HOSTFILE program args...
while [[ $# -gt 0 ]]; do
  case $1 in
    -np) NP=$2; shift 2;;
    -ppn) PPN=$2; shift 2;;
    -f) HOSTFILE=$2; shift 2;;
    *) break;;
  esac
done
export MASTER_ADDR=$(head -n 1 $HOSTFILE)
export MASTER_PORT=29500
mpirun -np $NP -ppn $PPN -f $HOSTFILE "$@"
