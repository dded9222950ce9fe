"""Whether the source binds each rank to one device of its node, and in which words (JobIntent.device_binding).

A rank bound to one device sees that device alone, as device 0: a program that never picks its
device (`cuda:0`, `.cuda()`) relies on the binding, and loses it where the port lets every rank see
the whole node (all ranks then share GPU 0). The forms read, each as its tool documents it:
- a per-rank wrapper that selects the rank's device (launch.py: an affinity script by name, or one
  that sets a visible-devices variable), and a visible-devices variable set per rank from a local
  rank (`bash -c 'CUDA_VISIBLE_DEVICES=$SLURM_LOCALID python ...'`): CUDA lists only those devices
  (CUDA C Programming Guide, "CUDA Environment Variables", read 2026-11-29);
- srun's --gpus-per-task=1, on the step or inherited from `#SBATCH --gpus-per-task=1` (srun(1):
  --gpus-per-task implies --gpu-bind=per_task, and srun reads SLURM_GPUS_PER_TASK from the job;
  https://slurm.schedmd.com/srun.html, read 2026-11-29), and srun's --gpu-bind=single:N, map_gpu:LIST
  or per_task:1 (one GPU a task, by the same page);
- Flux's -o gpu-affinity=per-task, the shell's GPUs split among its tasks (flux-shell-options(7), read
  2026-11-28), with at most one GPU a task;
- accelerate's --gpu_ids with one device: its workers' CUDA_VISIBLE_DEVICES (the trace's accelerate
  block, launchers/grammars.yaml);
- jsrun's resource sets of one GPU and one task (`-g 1`, `-a 1` or no -a): each task sees its set's
  GPU (IBM Job Step Manager, jsrun(1); the trace's resource_set rule, launchers/grammars.yaml).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from ..schedulers.base import Directives
    from .launch import Launch

# The variables each launcher sets to a task's index on its node (srun, torchrun's workers, Hydra
# and PALS, Open MPI, MVAPICH, Intel MPI, Flux, jsrun).
_LOCAL_INDEX = re.compile(r"\$\{?(?:SLURM_LOCALID|LOCAL_RANK|PMI_LOCAL_RANK|PALS_LOCAL_RANKID|OMPI_COMM_WORLD_LOCAL_RANK|"
                          r"MV2_COMM_WORLD_LOCAL_RANK|MPI_LOCALRANKID|FLUX_TASK_LOCAL_ID|JSM_NAMESPACE_LOCAL_RANK)\b")
_VISIBLE = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK")
# srun --gpu-bind values that give each task one GPU (srun(1), read 2026-11-29; the trace's ranks.gpu_bind)
_ONE_GPU_BIND = re.compile(r"single:\d+|map_gpu:[\d,]+|per_task:1")
# srun options that give the step GPUs of their own: the job's --gpus-per-task is not inherited then
_STEP_GPUS = ("gpus", "gpus_per_node", "gres", "gpus_per_task")


def source_binding(launch: Optional["Launch"], d: "Directives") -> Optional[str]:
    """The words that bind each rank of the source to one device, or None (its ranks see the node's)."""
    if launch is None:
        return None
    if launch.binding:
        return launch.binding
    # `VAR=x cmd`, and what a per-rank string or script exports (`srun bash -c 'export VAR=x; python ...'`)
    env = {**(launch.shell.env if launch.shell.depth else {}), **launch.env}
    for name in _VISIBLE:
        value = str(env.get(name, ""))
        if _LOCAL_INDEX.search(value):
            return f"{name}={value}"
    for name, opts in launch.stages:
        found = _launcher_binding(name, opts, d)
        if found:
            return found
    return None


def _launcher_binding(name: str, opts: dict, d: "Directives") -> Optional[str]:
    if name == "srun":
        if _last(opts, "gpus_per_task") == "1":
            return "srun --gpus-per-task=1"
        bind = (_last(opts, "gpu_bind") or "").rpartition("verbose,")[2]
        if _ONE_GPU_BIND.fullmatch(bind):
            return f"srun --gpu-bind={bind}"
        if d.gpus_per_task == 1 and d.scheduler == "slurm" and not any(key in opts for key in _STEP_GPUS):
            return "#SBATCH --gpus-per-task=1, inherited by srun"
    if name == "flux" and "gpu-affinity=per-task" in opts.get("setopt", []) and _last(opts, "gpus_per_task") in (None, "1"):
        return "flux run -o gpu-affinity=per-task"
    gpu_ids = (_last(opts, "gpu_ids") or "").strip("'\"")
    if name == "accelerate" and gpu_ids.isdigit():
        return f"accelerate launch --gpu_ids={gpu_ids}"
    if name == "jsrun" and _last(opts, "gpu_per_rs") == "1" and _last(opts, "tasks_per_rs") in (None, "1"):
        return "jsrun -g 1"
    return None


def _last(opts: dict, name: str) -> Optional[str]:
    values = opts.get(name)
    return str(values[-1]) if values else None
