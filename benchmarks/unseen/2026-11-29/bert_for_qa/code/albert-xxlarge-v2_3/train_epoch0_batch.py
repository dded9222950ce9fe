import argparse
import torch.distributed as dist
p = argparse.ArgumentParser(); p.add_argument("--local_rank", type=int)
a = p.parse_args(); dist.init_process_group("nccl")
