#!/bin/bash
accelerate launch --config_file accelerate_config.yaml train.py --lr 3e-4
