"""Mini-app: tiny GPT-2 trained with PyTorch DistributedDataParallel.

Run it wherever the real training program would run: `torchrun --nproc_per_node N ddp.py`,
`srun python ddp.py`, `mpiexec -n N python ddp.py`. See README.md for the result line."""

import sys

import torch
from torch.nn.parallel import DistributedDataParallel

import _common


def body(ctx: _common.Context) -> tuple[float, float]:
    ctx.init_process_group()
    model = _common.tiny_gpt2().to(ctx.device)
    # device_ids only for accelerators; DDP on CPU takes none.
    ddp = DistributedDataParallel(model, device_ids=[ctx.device] if ctx.device.type != "cpu" else None)
    optim = torch.optim.AdamW(ddp.parameters(), lr=1e-3)

    return _common.train_steps(ctx, _common.optimizer_step(ddp, optim))


if __name__ == "__main__":
    sys.exit(_common.run("ddp", body))
