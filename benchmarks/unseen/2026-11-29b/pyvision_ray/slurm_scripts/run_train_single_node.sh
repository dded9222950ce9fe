#!/bin/bash
set -x
python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    actor_rollout_ref.actor.strategy=fsdp \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1
