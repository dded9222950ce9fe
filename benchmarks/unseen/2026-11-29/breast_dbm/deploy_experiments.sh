#!/bin/bash
mkdir -p experiments
python src/make_experiments.py --out experiments
