from torch.distributed.fsdp import fully_shard
from torchtune import config, training
