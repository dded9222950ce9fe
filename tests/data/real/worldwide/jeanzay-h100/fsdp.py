# Stand-in for IDRIS's bench_fsdp_dlojz fsdp.py: ranks from Slurm through idr_torch, model wrapped in FSDP.
import idr_torch
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

dist.init_process_group(backend="nccl", init_method="env://", world_size=idr_torch.size, rank=idr_torch.rank)
torch.cuda.set_device(idr_torch.local_rank)
model = FSDP(torch.nn.Linear(1024, 1024).cuda())
