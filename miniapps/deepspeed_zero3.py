"""Mini-app: tiny GPT-2 trained with DeepSpeed ZeRO stage 3 (parameters, gradients and optimizer
state partitioned across ranks).

Run it like the real training program: `deepspeed --num_gpus N deepspeed_zero3.py`, `torchrun
--nproc_per_node N deepspeed_zero3.py`, `srun python deepspeed_zero3.py`, `mpiexec -n N python
deepspeed_zero3.py`. The DeepSpeed config is built here; --deepspeed/--deepspeed_config/--local_rank
from the original launch line are accepted and ignored. Without a GPU, DeepSpeed's CPU accelerator
is selected (DS_ACCELERATOR=cpu) and talks gloo unless oneCCL's torch bindings are installed."""

import os
import sys

import _common

if not _common.has_gpu():
    # Must be decided before deepspeed is imported: its accelerator is chosen once, at import.
    os.environ.setdefault("DS_ACCELERATOR", "cpu")

import deepspeed  # noqa: E402
import torch  # noqa: E402


def ds_config(world_size: int) -> dict:
    micro_batch = 2
    return {
        "train_micro_batch_size_per_gpu": micro_batch,
        "train_batch_size": micro_batch * world_size,
        "gradient_accumulation_steps": 1,
        "zero_optimization": {"stage": 3},
        # The optimizer is torch's AdamW handed over below: DeepSpeed's own Adam would JIT-compile
        # a C++ op on CPU, minutes of a CI job for a smoke test.
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 1000,
        "wall_clock_breakdown": False,
    }


def body(ctx: _common.Context) -> tuple[float, float]:
    from deepspeed.accelerator import get_accelerator

    if get_accelerator().device_name() == "cpu":
        # On CPU, init_distributed JIT-compiles a shared-memory all-reduce op (about a minute, and
        # a C++ toolchain) that only DeepSpeed's inference path uses; training does not need it.
        deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
    # DeepSpeed names the backend its accelerator talks (nccl, xccl/ccl, gloo on CPU without oneCCL).
    deepspeed.init_distributed(dist_backend=get_accelerator().communication_backend_name(),
                               timeout=ctx.timeout)
    config = ds_config(ctx.launch.world_size)
    # Built whole, then partitioned by deepspeed.initialize. (deepspeed.zero.Init would partition at
    # construction, but transformers' weight init does not run on those partitions unless its own
    # HfDeepSpeedConfig hook is set up, and a model this small gains nothing from it.)
    model = _common.tiny_gpt2()
    optim = torch.optim.AdamW(model.parameters(), lr=1e-3)
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optim, config=config)

    def step(tokens) -> float:
        loss = engine(input_ids=tokens, labels=tokens).loss
        engine.backward(loss)
        engine.step()
        return loss.item()

    return _common.train_steps(ctx, step)


if __name__ == "__main__":
    sys.exit(_common.run("deepspeed_zero3", body))
