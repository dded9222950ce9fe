#!/bin/tcsh
#PBS -N master
#PBS -l nodes=1:vortex:ppn=12
#PBS -l walltime=24:00:00
#PBS -j oe

source "/usr/local/anaconda3-2021.05/etc/profile.d/conda.csh"
module load anaconda3/2021.05
unsetenv PYTHONPATH
conda activate dhsrl4

set NUMNODES = 3
set PPN = 12
set IP_ADDRESS = `hostname -i`:29500

# the other nodes are separate jobs that join this one's rendezvous
@ i = 1
while ( $i < $NUMNODES )
    qsub -v NUMNODES=$NUMNODES,IP_ADDRESS=$IP_ADDRESS,PPN=$PPN workers.sh
    @ i++
end

torchrun --nnodes=$NUMNODES --nproc_per_node=$PPN --rdzv_id=790876 --rdzv_backend=c10d --rdzv_endpoint=$IP_ADDRESS /sciclone/home20/hmbaier/tm/run.py $PPN $NUMNODES
