import argparse
import deepspeed
p = argparse.ArgumentParser(); p.add_argument("--local_rank", type=int, default=-1)
p = deepspeed.add_config_arguments(p); print(p.parse_args())
