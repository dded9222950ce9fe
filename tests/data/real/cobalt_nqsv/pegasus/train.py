import torch.distributed
