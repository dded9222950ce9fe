#!/bin/bash
# RetinaNet R50 1x on COCO with the 4 GPUs of a workstation:  bash train_retinanet.sh
set -e

export CUDA_VISIBLE_DEVICES=0,1,2,3
export OMP_NUM_THREADS=1
CONFIG=configs/retinanet/retinanet_r50_fpn_1x_coco.py
WORK_DIR=work_dirs/retinanet_r50_fpn_1x_coco

bash tools/dist_train.sh $CONFIG 4 --work-dir $WORK_DIR --auto-scale-lr
