from torch.distributed.fsdp import fully_shard
