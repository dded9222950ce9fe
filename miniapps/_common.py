"""Shared plumbing for the mini-apps: who am I (rank, world size, local rank) under whichever
launcher started us, which device and communication backend exist, a tiny GPT-2, the explicit
collectives that prove every rank joined, and the one machine-readable result line.

The mini-apps are shipped as data and run as plain scripts (`python miniapps/ddp.py`), so this is
imported as a sibling module (`import _common`), not as part of the maple_ci package. The parser for
the result line lives in maple_ci/miniapp_result.py; the prefix and field names here must match it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable, Mapping

RESULT_PREFIX = "MAPLE_MINIAPP_RESULT"

# Message sizes (bytes) of the all-reduce bandwidth measurement: from latency-bound to where a
# network saturates on accelerators; smaller on CPU, where gloo moves tensors over TCP on busy cores.
ALLREDUCE_BYTES = {"cpu": (1 << 16, 1 << 20, 1 << 22), "accelerator": (1 << 20, 1 << 24, 1 << 28)}
ALLREDUCE_ITERS = 5

# Launcher families, most specific first. The order matters because launchers nest and environments
# leak: torchrun/deepspeed/accelerate started by srun or mpiexec see SLURM_*/PMI_* of their own
# process but set RANK/WORLD_SIZE for their workers, so RANK wins; mpiexec inside an sbatch script
# hands every rank the batch step's SLURM_PROCID=0, so MPI variables win over Slurm's. Cray PALS
# (Polaris, Aurora) sets PMI_RANK/PMI_SIZE/PMI_LOCAL_RANK too and has no PALS_SIZE, so its world
# size comes from PMI_SIZE. Each field lists alternative variable names, first present wins.
LAUNCHER_FAMILIES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    # "env": the env:// variables set by torchrun, the deepspeed launcher and accelerate launch
    ("env", ("RANK",), ("WORLD_SIZE",), ("LOCAL_RANK",)),
    ("openmpi", ("OMPI_COMM_WORLD_RANK",), ("OMPI_COMM_WORLD_SIZE",), ("OMPI_COMM_WORLD_LOCAL_RANK",)),
    ("mvapich", ("MV2_COMM_WORLD_RANK",), ("MV2_COMM_WORLD_SIZE",), ("MV2_COMM_WORLD_LOCAL_RANK",)),
    ("pals", ("PALS_RANKID",), ("PMI_SIZE",), ("PALS_LOCAL_RANKID", "PMI_LOCAL_RANK")),
    ("pmi", ("PMI_RANK",), ("PMI_SIZE",), ("MPI_LOCALRANKID", "PMI_LOCAL_RANK")),
    ("slurm", ("SLURM_PROCID",), ("SLURM_NTASKS", "SLURM_NPROCS"), ("SLURM_LOCALID",)),
)


@dataclass(frozen=True)
class LaunchEnv:
    launcher: str  # family name from LAUNCHER_FAMILIES, or "none" for a plain single process
    rank: int
    world_size: int
    local_rank: int | None  # None: the launcher did not say; the device is then rank % device count


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return int(value)
    return None


def detect_launch(env: Mapping[str, str]) -> LaunchEnv:
    """Rank, world size and local rank from the variables the launcher set (see LAUNCHER_FAMILIES)."""
    for family, rank_vars, size_vars, local_vars in LAUNCHER_FAMILIES:
        rank, size = _first(env, rank_vars), _first(env, size_vars)
        if rank is None or size is None:
            continue
        if not 0 <= rank < size:
            raise ValueError(f"{family} launcher gave rank {rank} outside world size {size}")
        return LaunchEnv(family, rank, size, _first(env, local_vars))
    return LaunchEnv("none", 0, 1, 0)


def first_host_of_nodelist(nodelist: str) -> str:
    """First host of a Slurm nodelist. `scontrol show hostnames` is the authority; without it (a
    login node that lacks Slurm's client, a test) expand the leading entry by hand:
    "nid[001-004,010],login1" -> "nid001"."""
    if shutil.which("scontrol"):
        try:
            out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                                 text=True, timeout=30, check=True).stdout.split()
            if out:
                return out[0]
        except (subprocess.SubprocessError, OSError):
            pass
    match = re.match(r"([^,\[]+)(?:\[([^\],-]+))?", nodelist.strip())
    if not match:
        raise ValueError(f"cannot read a host from nodelist {nodelist!r}")
    return match.group(1) + (match.group(2) or "")


def rendezvous_address(env: Mapping[str, str]) -> tuple[str, str]:
    """MASTER_ADDR/MASTER_PORT for ranks started by a launcher that does not set them (srun, mpiexec).

    Address: MASTER_ADDR, else the first node of the Slurm allocation, else the first line of
    PBS_NODEFILE, else 127.0.0.1 (single node; a multi-node job outside Slurm/PBS must set it).
    Port: MASTER_PORT, else 29500 offset by the job id so two jobs sharing a node do not collide;
    every rank of one job computes the same value.
    """
    addr = env.get("MASTER_ADDR")
    if not addr:
        nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
        nodefile = env.get("PBS_NODEFILE")
        if nodelist:
            addr = first_host_of_nodelist(nodelist)
        elif nodefile and os.path.isfile(nodefile):
            with open(nodefile) as fh:
                addr = next((line.strip() for line in fh if line.strip()), "")
        addr = addr or "127.0.0.1"
    port = env.get("MASTER_PORT")
    if not port:
        job_id = env.get("SLURM_JOB_ID") or env.get("PBS_JOBID") or ""
        digits = re.match(r"\d+", job_id)
        port = str(29500 + (int(digits.group()) % 1000 if digits else 0))
    return addr, port


def export_launch_env(launch: LaunchEnv, device_index: int | None) -> None:
    """Give torch.distributed, DeepSpeed and Accelerate the env:// variables they read, whichever
    launcher actually started us.

    LOCAL_RANK becomes the index of the device this rank uses, because DeepSpeed and Accelerate pick
    their device from it: under `srun --gpus-per-task=1` every rank sees one GPU (index 0) while
    SLURM_LOCALID runs 0..N-1. On CPU it is the launcher's local rank."""
    os.environ["RANK"] = str(launch.rank)
    os.environ["WORLD_SIZE"] = str(launch.world_size)
    local = device_index if device_index is not None else launch.local_rank
    os.environ["LOCAL_RANK"] = str(local if local is not None else 0)
    addr, port = rendezvous_address(os.environ)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = addr, port


def check_allocated_gpus(launch: LaunchEnv, env: Mapping[str, str]) -> None:
    """Fail a torchrun/deepspeed/accelerate worker whose LOCAL_RANK is past the GPUs the scheduler
    gave this node. On GPU nodes a training program's torch.cuda.set_device(LOCAL_RANK) raises exactly
    this error; on CPU-only test nodes (stand-in GPUs, gloo) nothing would, but the allocation is
    still the truth. Only the "env" launchers: all their workers share one CUDA_VISIBLE_DEVICES,
    while ranks srun starts may each see their own GPU 0 (--gpus-per-task=1)."""
    visible, on_node = env.get("CUDA_VISIBLE_DEVICES", ""), env.get("SLURM_GPUS_ON_NODE", "")
    if launch.launcher != "env" or launch.local_rank is None or not on_node.isdigit() or on_node == "0":
        return  # no GPUs allocated by Slurm: plain CPU runs
    count = len(visible.split(",")) if visible else int(on_node)
    if launch.local_rank >= count:
        why = (f"invalid device ordinal (local rank {launch.local_rank}, but the allocation gives this "
               f"node {count} GPUs: CUDA_VISIBLE_DEVICES={visible})")
        raise RuntimeError(f"CUDA error: {why}")  # the traceback shows this line: no wording to match


def has_gpu() -> bool:
    import torch

    return torch.cuda.is_available() or (hasattr(torch, "xpu") and torch.xpu.is_available())


def pick_device_and_backend(launch: LaunchEnv):
    """cuda+nccl, else xpu+xccl (oneCCL's "ccl" on torch builds without xccl), else cpu+gloo."""
    import torch
    import torch.distributed as dist

    def index(count: int) -> int:
        return (launch.local_rank if launch.local_rank is not None else launch.rank) % count

    if torch.cuda.is_available():
        device = torch.device("cuda", index(torch.cuda.device_count()))
        torch.cuda.set_device(device)
        return device, "nccl"
    if has_gpu():  # not CUDA, so an Intel GPU
        device = torch.device("xpu", index(torch.xpu.device_count()))
        torch.xpu.set_device(device)
        if dist.is_backend_available("xccl"):
            return device, "xccl"
        import oneccl_bindings_for_pytorch  # noqa: F401  registers the "ccl" backend
        return device, "ccl"
    return torch.device("cpu"), "gloo"


@dataclass
class Context:
    name: str
    launch: LaunchEnv
    device: object  # torch.device
    backend: str
    steps: int
    timeout: timedelta

    def init_process_group(self) -> None:
        import torch.distributed as dist

        dist.init_process_group(self.backend, init_method="env://", rank=self.launch.rank,
                                world_size=self.launch.world_size, timeout=self.timeout)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="maple-ci mini-app")
    parser.add_argument("--steps", type=int, default=2)
    # Launchers append their own flags (deepspeed: --local_rank=N; users' DeepSpeed scripts:
    # --deepspeed --deepspeed_config X). Accept and ignore them; rank comes from the environment.
    parser.add_argument("--local_rank", "--local-rank", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--deepspeed", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--deepspeed_config", "--deepspeed-config", default=None, help=argparse.SUPPRESS)
    # Whatever else the original launch line passed to the training program is ignored too.
    args, _unknown = parser.parse_known_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")  # no step, no loss to report
    return args


def tiny_gpt2():
    """A GPT-2 small enough for two busy CPU cores; random init, nothing downloaded. Same seed on
    every rank so strategies that do not broadcast parameters (FSDP2) start identical."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    # GPT-2's default bos/eos (50256) lie outside the tiny vocabulary; transformers warns otherwise.
    # No dropout: then every strategy computes the same loss on the same data, whichever random
    # numbers its framework draws on the way.
    config = GPT2Config(vocab_size=256, n_positions=32, n_embd=64, n_layer=2, n_head=2,
                        bos_token_id=0, eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(config)
    model.loss_type = "ForCausalLM"  # what transformers falls back to anyway, minus its warning per rank
    return model


def random_batch(rank: int, step: int, device, batch: int = 2, seq: int = 32):
    """Different tokens on every rank and step, so gradients really need reducing."""
    import torch

    gen = torch.Generator().manual_seed(1000 * rank + step)
    tokens = torch.randint(0, 256, (batch, seq), generator=gen)
    return tokens.to(device)


def optimizer_step(model, optim, backward: Callable[[object], None] = lambda loss: loss.backward()):
    """The step of every torch-optimizer mini-app: forward, backward (the framework's own, if it
    has one), update. Returns step(tokens) -> loss for train_steps."""

    def step(tokens) -> float:
        loss = model(input_ids=tokens, labels=tokens).loss
        backward(loss)
        optim.step()
        optim.zero_grad(set_to_none=True)
        return loss.item()

    return step


def train_steps(ctx: Context, step: Callable[[object], float]) -> tuple[float, float]:
    """Run ctx.steps training steps; step(tokens) does forward+backward+update and returns the loss.
    Returns (last loss, last step time); the first step carries warm-up, the last is the steady one."""
    loss, elapsed = float("nan"), 0.0
    for i in range(ctx.steps):
        tokens = random_batch(ctx.launch.rank, i, ctx.device)
        start = time.perf_counter()
        loss = step(tokens)
        elapsed = time.perf_counter() - start
    return loss, elapsed


def _check_collectives(ctx: Context, loss: float) -> dict:
    """Explicit all_reduce and all_gather on top of whatever the strategy did, plus an
    all_gather_object of (rank, host) that proves which ranks joined."""
    import torch
    import torch.distributed as dist

    world = dist.get_world_size()
    mean_loss = torch.tensor([loss], dtype=torch.float32, device=ctx.device)
    dist.all_reduce(mean_loss)
    mean_loss /= world

    mine = torch.tensor([dist.get_rank()], dtype=torch.int64, device=ctx.device)
    gathered = [torch.zeros_like(mine) for _ in range(world)]
    dist.all_gather(gathered, mine)
    gathered_ranks = [int(t.item()) for t in gathered]

    seen: list = [None] * world
    dist.all_gather_object(seen, (dist.get_rank(), socket.gethostname()))
    ranks_seen = sorted(r for r, _ in seen)
    problems = []
    if world != ctx.launch.world_size:
        problems.append(f"process group has {world} ranks, launcher said {ctx.launch.world_size}")
    if ranks_seen != list(range(ctx.launch.world_size)) or gathered_ranks != list(range(world)):
        problems.append(f"ranks seen {ranks_seen} (all_gather {gathered_ranks}), expected 0..{world - 1}")
    result = {
        "ok": not problems,
        "world_size": world,
        "ranks_seen": ranks_seen,
        "hostnames": sorted({host for _, host in seen}),
        "loss": round(float(mean_loss.item()), 6),
    }
    if problems:
        result["error"] = "; ".join(problems)
    return result


def _synchronize(device) -> None:
    """Wait for the device's queued work, so a timer measures the collective and not its launch."""
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "xpu":
        torch.xpu.synchronize(device)


def _time_allreduce(ctx: Context, size: int) -> float:
    """Seconds one all_reduce of `size` bytes takes on the slowest rank: a warm-up (connections
    are made on first use), then the mean of ALLREDUCE_ITERS."""
    import torch
    import torch.distributed as dist

    tensor = torch.ones(size // 4, dtype=torch.float32, device=ctx.device)
    dist.all_reduce(tensor)
    _synchronize(ctx.device)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(ALLREDUCE_ITERS):
        dist.all_reduce(tensor)
    _synchronize(ctx.device)
    slowest = torch.tensor([(time.perf_counter() - start) / ALLREDUCE_ITERS], dtype=torch.float64, device=ctx.device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    return float(slowest.item())


def measure_allreduce(ctx: Context) -> list[dict]:
    """All-reduce bandwidth at a few message sizes, as nccl-tests' all_reduce_perf reports it
    (NVIDIA/nccl-tests doc/PERFORMANCE.md): algbw = bytes / time, busbw = algbw * 2(n-1)/n, in
    GB/s of 10^9 bytes. None of it for a world of one: nothing crosses a link."""
    import torch.distributed as dist

    world = dist.get_world_size()
    if world < 2:
        return []
    sizes = ALLREDUCE_BYTES["cpu" if ctx.device.type == "cpu" else "accelerator"]
    rows = []
    for size in sizes:
        seconds = _time_allreduce(ctx, size)
        algbw = size / seconds / 1e9
        rows.append({"bytes": size, "time_us": round(seconds * 1e6, 1), "algbw_gbps": round(algbw, 3),
                     "busbw_gbps": round(algbw * 2 * (world - 1) / world, 3)})
    return rows


def ask_transport_log(backend: str) -> None:
    """Have NCCL (and RCCL, which reads the same variables) print which network it chose (`Using
    network IB`, `NET/OFI ...`, `NET/Socket : Using ...`), unless the job set its own level: maple
    reads the transport from those INFO lines. INIT and NET only, to keep the log short."""
    if backend == "nccl" and "NCCL_DEBUG" not in os.environ:
        os.environ["NCCL_DEBUG"] = "INFO"
        os.environ.setdefault("NCCL_DEBUG_SUBSYS", "INIT,NET")


def emit(result: dict) -> None:
    # One write, flushed, so launchers that interleave ranks' stdout cannot split the line.
    sys.stdout.write(f"{RESULT_PREFIX} {json.dumps(result)}\n")
    sys.stdout.flush()


def run(name: str, body: Callable[[Context], tuple[float, float]], argv: list[str] | None = None) -> int:
    """Run one mini-app: body(ctx) sets up its framework (initialising the process group its own
    way), trains and returns (loss, step_time_s). Rank 0 prints the result line; a rank that fails
    prints one with ok false and its error (rank 0 may be stuck waiting for it). Exit 0 only if ok."""
    import torch.distributed as dist

    args = parse_args(argv)
    # Bounds every collective, so one dead rank turns into an error instead of a hung CI job.
    timeout = timedelta(seconds=float(os.environ.get("MAPLE_MINIAPP_TIMEOUT", "300")))
    result: dict = {"ok": False, "miniapp": name}
    rank = 0
    try:
        launch = detect_launch(os.environ)
        rank = launch.rank
        result.update(launcher=launch.launcher, world_size=launch.world_size)
        check_allocated_gpus(launch, os.environ)
        device, backend = pick_device_and_backend(launch)
        ask_transport_log(backend)
        export_launch_env(launch, device.index)
        ctx = Context(name, launch, device, backend, args.steps, timeout)
        loss, step_time = body(ctx)
        if not dist.is_initialized():
            raise RuntimeError(f"{name} did not initialise torch.distributed")
        result.update(_check_collectives(ctx, loss))
        result.update(backend=str(dist.get_backend()), device=str(ctx.device),
                      step_time_s=round(step_time, 4), allreduce=measure_allreduce(ctx))
        # No rank tears its process group down while a peer is still in a collective with it (a
        # gloo peer that closes its sockets early can abort a slower one under load).
        dist.barrier()
    except Exception as exc:  # report any failure as a result line, then exit non-zero
        traceback.print_exc()
        result.update(ok=False, rank=rank, error=f"{type(exc).__name__}: {exc}")
    finally:
        # Drop every object that still holds the process group (DDP/DeepSpeed engines sit in
        # reference cycles), so destroy_process_group really frees it and joins gloo's worker
        # threads now. Left to interpreter shutdown, those threads release tensors after Python is
        # gone and abort the process ("terminate called without an active exception").
        gc.collect()
        if dist.is_available() and dist.is_initialized():
            try:
                dist.destroy_process_group()
            except Exception:  # teardown must not hide the real result
                traceback.print_exc()
    if rank == 0 or not result["ok"]:
        emit(result)
    return 0 if result["ok"] else 1
