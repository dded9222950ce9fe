import torch.distributed as dist
