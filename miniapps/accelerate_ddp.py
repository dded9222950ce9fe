"""Mini-app: tiny GPT-2 trained through Hugging Face Accelerate (accelerate.Accelerator), which
wraps the model in DDP when it runs on several processes.

Run it like the real training program: `accelerate launch --num_processes N accelerate_ddp.py`
(add --cpu on a machine without GPUs), `torchrun --nproc_per_node N accelerate_ddp.py`, `srun python
accelerate_ddp.py`, `mpiexec -n N python accelerate_ddp.py`. See README.md for the result line."""

import sys

import torch
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs

import _common


def body(ctx: _common.Context) -> tuple[float, float]:
    # Accelerator initialises the process group itself, from the RANK/WORLD_SIZE/MASTER_* variables
    # _common exported, and picks its own device; the collectives below must use that device.
    # cpu=True on a CPU-only machine: without it Accelerate still joins the process group but
    # settles on DistributedType.NO and leaves the model unwrapped, so nothing averages gradients.
    # Naming the backend keeps CPU runs on gloo (left alone, Accelerate hands torch no backend and
    # the group reports "undefined") and the timeout bounds hangs like the other mini-apps.
    accelerator = Accelerator(cpu=ctx.device.type == "cpu",
                              kwargs_handlers=[InitProcessGroupKwargs(backend=ctx.backend, timeout=ctx.timeout)])
    ctx.device = accelerator.device
    model = _common.tiny_gpt2()
    optim = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, optim = accelerator.prepare(model, optim)

    return _common.train_steps(ctx, _common.optimizer_step(model, optim, accelerator.backward))


if __name__ == "__main__":
    sys.exit(_common.run("accelerate_ddp", body))
