import horovod.torch as hvd
import torch

hvd.init()
torch.cuda.set_device(hvd.local_rank())
print(f"rank {hvd.rank()} of {hvd.size()}")
