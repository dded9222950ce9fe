"""The login node's own view as facts: GPU model and memory (nvidia-smi), the GPUs' NUMA order
(`nvidia-smi topo -m`, `rocm-smi --showtopo`), network interfaces, container runtimes. A login
node often has no GPU: then these come from the scheduler's names (templates/discover/gpus.yaml),
unconfirmed, with the query a compute node would answer."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

import yaml

from ..paths import templates_dir
from . import Fact, told, unconfirmed
from .probe import RUNTIMES

# Interface name families NCCL should use (NCCL_SOCKET_IFNAME takes a prefix): HPE Slingshot's
# hsn* and InfiniBand's ib* (NCCL docs, "Environment Variables"; Delta and Perlmutter set hsn).
FAST_INTERFACES = ("hsn", "ib")


@lru_cache(maxsize=1)
def gpu_names() -> list[dict]:
    return yaml.safe_load((templates_dir() / "discover" / "gpus.yaml").read_text())


def gpu_by_name(name: str) -> Optional[dict]:
    return next((row for row in gpu_names() if re.search(row["match"], name, re.I)), None)


def nvidia_gpus(text: str) -> list[tuple[str, int]]:
    """(name, memory GB) per GPU of `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader`."""
    rows = []
    for line in text.splitlines():
        name, _, memory = line.rpartition(",")
        mib = re.match(r"\s*(\d+)\s*MiB", memory)
        if name and mib:
            rows.append((name.strip(), round(int(mib.group(1)) / 1024)))
    return rows


def numa_of_gpus(topo: str) -> dict[int, int]:
    """GPU index -> NUMA node, from `nvidia-smi topo -m` (its "NUMA Affinity" column) or
    `rocm-smi --showtopo` ("GPU[i] : (Topology) Numa Node: n")."""
    rocm = re.findall(r"GPU\[(\d+)\]\s*:\s*\(Topology\) Numa Node:\s*(\d+)", topo)
    if rocm:
        return {int(gpu): int(numa) for gpu, numa in rocm}
    header = next((line.split() for line in topo.splitlines() if "NUMA" in line and "Affinity" in line), None)
    if not header or "CPU" not in header:
        return {}
    columns = header.index("CPU")  # the device columns come before "CPU Affinity"
    numa = {}
    for line in topo.splitlines():
        words = line.split()
        if words and re.fullmatch(r"GPU\d+", words[0]) and len(words) > columns + 2 and words[columns + 2].isdigit():
            numa[int(words[0][3:])] = int(words[columns + 2])
    return numa


def device_order(numa: dict[int, int]) -> Optional[str]:
    """The order that gives local rank i a GPU on the i-th NUMA domain; None where it is the board's."""
    order = sorted(numa, key=lambda gpu: (numa[gpu], gpu))
    return None if order == sorted(numa) else ",".join(map(str, order))


def socket_ifname(names: list[str]) -> Optional[str]:
    return next((family for family in FAST_INTERFACES if any(n.startswith(family) for n in names)), None)


def _gpu_facts(probe, found: dict[str, Fact]) -> dict[str, Fact]:
    smi = probe("nvidia_gpus")
    gpus = nvidia_gpus(smi) if smi is not None else []
    if gpus:
        name, memory = gpus[0]
        return {"gpu_vendor": told("nvidia", "nvidia_gpus"), "gpu_model": told(name, "nvidia_gpus"),
                "gpu_memory_gb": told(memory, "nvidia_gpus")}
    row = gpu_by_name(found.get("gpu_type", Fact("", "")).value or "")
    if row:
        return {"gpu_vendor": Fact(row["vendor"], found["gpu_type"].command),
                "gpu_model": Fact(row["model"], found["gpu_type"].command),
                "gpu_memory_gb": unconfirmed(row["memory_gb"], "nvidia_gpus")}
    return {"gpu_vendor": unconfirmed("nvidia", "nvidia_gpus"), "gpu_model": unconfirmed("unconfirmed", "nvidia_gpus"),
            "gpu_memory_gb": unconfirmed(1, "nvidia_gpus")}


def _order_fact(probe, vendor: str) -> Fact:
    key = "rocm_topo" if vendor == "amd" else "nvidia_topo"
    topo = probe(key)
    numa = numa_of_gpus(topo) if topo is not None else {}
    return told(device_order(numa), key) if numa else unconfirmed(None, key)


def facts(probe, found: dict[str, Fact]) -> dict[str, Fact]:
    """The node's facts; `found` (the scheduler's) gives the GPU's name when no GPU answers here."""
    node = _gpu_facts(probe, found)
    node["device_order"] = _order_fact(probe, node["gpu_vendor"].value)
    interfaces = probe("interfaces")
    names = interfaces.split() if interfaces is not None else []
    node["nccl_socket_ifname"] = (told(socket_ifname(names), "interfaces") if interfaces is not None
                                  else unconfirmed(None, "interfaces"))
    if "cpu_arch" not in found:
        arch = probe("arch")
        node["cpu_arch"] = told(arch.strip(), "arch") if arch else unconfirmed("x86_64", "arch")
    runtime = next((name for name in RUNTIMES if probe.which(name)), "none")
    node["container_runtime"] = Fact(runtime, f"command -v {' '.join(RUNTIMES)}")
    return node
