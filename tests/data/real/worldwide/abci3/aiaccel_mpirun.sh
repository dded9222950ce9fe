#! /bin/bash

#PBS -q rt_HF
#PBS -l select=1:mpiprocs=8:ompthreads=12
#PBS -l walltime=6:00:00
#PBS -P gaa50123
#PBS -j oe
#PBS -k oed

cd ${PBS_O_WORKDIR}

source /etc/profile.d/modules.sh
module load hpcx
module load python/3.13/3.13.2
source ~/venvs/aiaccel/bin/activate

wd=/groups/gaa50123/experiments/resnet_ddp

mpirun -np 8 -bind-to none -map-by slot \
        -x MAIN_ADDR=$(hostname -i) \
        -x MAIN_PORT=3000 \
        python -m aiaccel.torch.apps.train $wd/config_ddp.yaml --working_directory $wd
