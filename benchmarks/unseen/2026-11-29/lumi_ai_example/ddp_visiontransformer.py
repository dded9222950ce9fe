import argparse, os
import torch.distributed as dist
p = argparse.ArgumentParser(); p.add_argument("--epochs", type=int)
args = p.parse_args()
dist.init_process_group("nccl")
print(os.environ["LOCAL_RANK"], args)
