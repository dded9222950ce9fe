import sys
import torch.distributed as dist
dist.init_process_group("gloo")
print(dist.get_rank(), sys.argv[1:])
