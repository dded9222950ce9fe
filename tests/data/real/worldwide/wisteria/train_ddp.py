import os

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

rank, size = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])
dist.init_process_group("nccl", rank=rank, world_size=size)
