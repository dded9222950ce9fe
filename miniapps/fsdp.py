"""Mini-app: tiny GPT-2 sharded with PyTorch FSDP2 (`fully_shard`): each transformer block is its
own shard group, then the whole model. Works on CPU with gloo as well as on GPUs.

Run it like the real training program: `torchrun --nproc_per_node N fsdp.py`, `srun python
fsdp.py`, `mpiexec -n N python fsdp.py`. See README.md for the result line."""

import sys

import torch
from torch.distributed.fsdp import fully_shard

import _common


def body(ctx: _common.Context) -> tuple[float, float]:
    ctx.init_process_group()
    model = _common.tiny_gpt2().to(ctx.device)
    for block in model.transformer.h:
        fully_shard(block)
    fully_shard(model)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-3)

    return _common.train_steps(ctx, _common.optimizer_step(model, optim))


if __name__ == "__main__":
    sys.exit(_common.run("fsdp", body))
