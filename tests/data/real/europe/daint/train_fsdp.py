"""Program stub for the corpus: the training script uenv_torchrun.sbatch starts (its strategy is FSDP)."""
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def main():
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    model = FSDP(torch.nn.Transformer(d_model=1024).cuda(), use_orig_params=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    del optimizer
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
