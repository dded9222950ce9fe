"""What a program written for one GPU vendor must change to run on another's machine.

A port moves the launch, never the program's code: a CUDA training script sent to Aurora gets the
right ranks and oneCCL settings, yet still calls torch.cuda and init_process_group("nccl"). The
header says what to change, from the centers' own porting pages (read 2026-11-25):
  - ALCF Aurora, https://docs.alcf.anl.gov/aurora/data-science/frameworks/pytorch/: "All the API
    calls involving torch.cuda, should be replaced with torch.xpu"; replace "cuda" with "xpu" when
    moving tensors; "the backend must be changed to xccl".
  - OLCF, https://docs.olcf.ornl.gov/software/analytics/pytorch_frontier.html: PyTorch's ROCm build
    keeps torch.cuda, "cuda" devices and backend="nccl" (RCCL underneath).
"""

from typing import Optional

from .profiles import ClusterProfile, load_profiles

_TO_XPU = ("torch.cuda.* calls become torch.xpu.*, device 'cuda' becomes 'xpu', and "
           "init_process_group's backend 'nccl' becomes 'xccl' (ALCF's Aurora PyTorch guide)")
_FROM_XPU = ("torch.xpu.* calls become torch.cuda.*, device 'xpu' becomes 'cuda', backend 'xccl'/'ccl' "
             "becomes 'nccl', and imports of intel_extension_for_pytorch or oneccl_bindings_for_pytorch go")
_NATIVE = "extensions built for {src} (custom kernels, apex, flash-attn, bitsandbytes wheels) must be {dst} builds"
_CHANGES = {
    ("nvidia", "intel"): _TO_XPU,
    ("amd", "intel"): _TO_XPU,
    ("intel", "nvidia"): _FROM_XPU,
    ("intel", "amd"): _FROM_XPU + "; PyTorch's ROCm build then takes 'cuda' and 'nccl' as they are",
    ("nvidia", "amd"): ("PyTorch's ROCm build keeps torch.cuda, 'cuda' devices and backend 'nccl' (RCCL), but "
                        + _NATIVE.format(src="CUDA", dst="ROCm") + "; nvidia-smi/pynvml calls become rocm-smi"),
    ("amd", "nvidia"): "torch.cuda code runs as is, but " + _NATIVE.format(src="ROCm", dst="CUDA"),
}
_NAMES = {"nvidia": "NVIDIA CUDA", "amd": "AMD ROCm", "intel": "Intel XPU"}


def vendor_note(source_cluster: Optional[str], target: ClusterProfile) -> Optional[str]:
    """The header note for a program moving between GPU vendors, or None (same vendor, or the
    source's machine is not known, so its vendor is not either)."""
    source = load_profiles().get(source_cluster or "")
    if source is None or source.gpu_vendor == target.gpu_vendor:
        return None
    change = _CHANGES[(source.gpu_vendor, target.gpu_vendor)]
    return (f"the program was written for {source.name}'s {_NAMES[source.gpu_vendor]} GPUs and {target.name} has "
            f"{_NAMES[target.gpu_vendor]} ones; in its code, {change}")
