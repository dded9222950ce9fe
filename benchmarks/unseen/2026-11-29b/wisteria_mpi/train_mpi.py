import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

# rank and size come from Open MPI
dist.init_process_group("mpi")
