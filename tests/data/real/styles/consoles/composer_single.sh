#!/bin/bash
# train MPT-125M on the 4 GPUs of this machine; composer starts one rank per GPU
cd "$(dirname "$0")"
composer -n 4 train.py yamls/pretrain/mpt-125m.yaml \
  data_local=my-copy-c4 \
  train_loader.dataset.split=train_small \
  eval_loader.dataset.split=val_small \
  max_duration=10ba eval_interval=0 save_folder=mpt-125m
