#!/bin/bash
# one fairseq-train per GPU: the rank comes from the Slurm task
fairseq-train data-bin/wikitext-103 \
  --ddp-backend fully_sharded --fp16 --fp16-init-scale 4 \
  --cpu-offload --checkpoint-activations \
  --task language_modeling --tokens-per-sample 2048 --batch-size 8 \
  --arch transformer_lm_gpt3_13 \
  --optimizer cpu_adam --adam-betas "(0.9,0.98)" \
  --lr 0.0001 --lr-scheduler polynomial_decay --warmup-updates 5 --total-num-update 10 \
  --max-update 10 --no-save --log-format json --log-interval 1
