#!/bin/bash
set -ex

MEGATRON_DIR=/workspace/Megatron-DeepSpeed
cd $MEGATRON_DIR
DATETIME=`date +'date_%y-%m-%d_time_%H-%M-%S'`
mkdir -p $MEGATRON_DIR/logs

BASE_DATA_PATH=/data/Megatron-LM/data
DATASET=${BASE_DATA_PATH}/indexed_datasets/megatron
VOCAB_PATH=${BASE_DATA_PATH}/gpt2-vocab.json
MERGE_PATH=${BASE_DATA_PATH}/gpt2-merges.txt

CONFIG_JSON=ds_config_gpt_1.3B.json
ZERO_STAGE=1

TP=2
PP=1
NLAYERS=24
HIDDEN=2048
HEADS=16
SEQ=2048
MICRO_BATCH=4
GLOBAL_BATCH=512
TRAIN_ITERS=300000

# The DeepSpeed config is generated here so it always matches the batch sizes above
cat <<EOT > $CONFIG_JSON
{
  "train_batch_size": $GLOBAL_BATCH,
  "train_micro_batch_size_per_gpu": $MICRO_BATCH,
  "steps_per_print": 10,
  "zero_optimization": { "stage": $ZERO_STAGE },
  "gradient_clipping": 1.0,
  "fp16": { "enabled": true, "loss_scale": 0, "initial_scale_power": 12 },
  "wall_clock_breakdown": false
}
EOT

OUTPUT_DIR=${MEGATRON_DIR}/output/gpt-1.3B-tp${TP}-pp${PP}
mkdir -p $OUTPUT_DIR

options=" \
    --tensor-model-parallel-size $TP \
    --pipeline-model-parallel-size $PP \
    --num-layers $NLAYERS \
    --hidden-size $HIDDEN \
    --num-attention-heads $HEADS \
    --seq-length $SEQ \
    --max-position-embeddings $SEQ \
    --micro-batch-size $MICRO_BATCH \
    --global-batch-size $GLOBAL_BATCH \
    --train-iters $TRAIN_ITERS \
    --lr 2.0e-4 \
    --min-lr 1.0e-6 \
    --lr-decay-style cosine \
    --data-path $DATASET \
    --vocab-file $VOCAB_PATH \
    --merge-file $MERGE_PATH \
    --save $OUTPUT_DIR \
    --fp16 \
    --deepspeed \
    --deepspeed_config $CONFIG_JSON \
    --zero-stage $ZERO_STAGE \
    --deepspeed-activation-checkpointing \
    "

run_cmd="deepspeed ${MEGATRON_DIR}/pretrain_gpt.py ${options} &> ${MEGATRON_DIR}/logs/gpt-1.3B-${DATETIME}.log"
echo ${run_cmd}
eval ${run_cmd}

set +x
