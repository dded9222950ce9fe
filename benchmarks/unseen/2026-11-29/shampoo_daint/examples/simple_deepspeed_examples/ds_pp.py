import argparse
import deepspeed
from deepspeed.pipe import PipelineModule
p = argparse.ArgumentParser(); p.add_argument("--steps", type=int)
p = deepspeed.add_config_arguments(p); args = p.parse_args()
deepspeed.init_distributed()
# num_stages=2: one stage per rank
