#! /bin/sh
#$ -N channel_sampling_sweep
#$ -P scs_schumacher-group 
#$ -M user@example.org
#$ -cwd
#$ -l h_rt=47:00:00

#$ -pe gpu-titanx 1
#$ -l h_vmem=64G

bash training_explore.sh $SGE_TASK_ID