#!/bin/bash
srun \
  --container-image=/netscratch/enroot/nvcr.io_nvidia_pytorch_23.05-py3.sqsh \
  --container-mounts=/netscratch/$USER:/netscratch/$USER,/ds/text:/data,"`pwd`":/workspace \
  --container-workdir=/workspace \
  -p RTXA6000 \
  --gpus=1 \
  --mem=64G \
  --time=2-00:00:00 \
  python -m signjoey train configs/phoenix.yaml
