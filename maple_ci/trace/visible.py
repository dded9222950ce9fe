"""The devices a GPU program sees, from the visibility variables in its environment. No imports of
maple's own: the trace's stand-ins use it inside the sandbox (as `visible`), and the host reads ranks with it.
"""

from __future__ import annotations

# CUDA C Programming Guide, "CUDA Environment Variables" (https://docs.nvidia.com/cuda/cuda-c-programming-guide/,
# read 2026-11-29): only the devices CUDA_VISIBLE_DEVICES lists are visible to a CUDA application, those
# before the first index that is not a device; NVML (nvidia-smi) does not read it. ROCm applies
# ROCR_VISIBLE_DEVICES first and HIP_VISIBLE_DEVICES (else CUDA_VISIBLE_DEVICES) as indices into the
# devices it left (https://rocm.docs.amd.com/en/latest/conceptual/gpu-isolation.html, read 2026-11-28; that
# HIP stops at an invalid index as CUDA does is unconfirmed), so LUMI's select_gpu (ROCR_VISIBLE_DEVICES
# from the local rank) leaves one device under Slurm's CUDA_VISIBLE_DEVICES=0,...,7.


def _listed(value) -> list | None:
    return None if value is None else [d.strip() for d in str(value).split(",") if d.strip()]


def visible_list(env) -> list | None:
    """The devices a GPU program sees in `env`, by the node's numbering; None: every device of the node."""
    rocr = _listed(env.get("ROCR_VISIBLE_DEVICES"))
    indices = _listed(env.get("HIP_VISIBLE_DEVICES", env.get("CUDA_VISIBLE_DEVICES")))
    if rocr is None or indices is None or ("HIP_VISIBLE_DEVICES" not in env and indices == rocr):
        # CUDA's list equal to ROCr's: one assignment written into each variable (Slurm's gres/gpu plugin
        # sets CUDA_, ROCR_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL as its gres.conf says, never HIP's;
        # https://slurm.schedmd.com/gres.conf.html "Flags", read 2026-11-29; the trace's srun sets all three)
        return indices if rocr is None else rocr
    seen = []
    for index in indices:
        if not index.isdigit() or int(index) >= len(rocr):
            break
        seen.append(rocr[int(index)])
    return seen
