#! /bin/sh
#$ -N channel_sampling_sweep
#$ -P scs_schumacher-group 
#$ -M user@example.org
#$ -cwd
#$ -l h_rt=47:00:00

#$ -pe gpu-titanx 1
#$ -l h_vmem=64G


. /etc/profile.d/modules.sh

module load anaconda
source activate nca_tensorflow

python ./emoji_channels_time_sampling.py $1
source deactivate