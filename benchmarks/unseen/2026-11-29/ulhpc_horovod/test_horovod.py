import horovod.torch as hvd
import torch

hvd.init()
torch.cuda.set_device(hvd.local_rank())
print(hvd.rank(), hvd.size())
