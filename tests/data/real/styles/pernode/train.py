import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
dist.init_process_group("nccl")
