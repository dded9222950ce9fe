"""Slurm's answers as facts: `scontrol show partition|node|config`, sacctmgr's associations and QOS,
`srun --mpi=list`. Field names as scontrol prints them (https://slurm.schedmd.com/scontrol.html,
read 2026-11-29); the one-line (--oneliner) and the multi-line forms read alike."""

from __future__ import annotations

import re
from typing import Optional

from ..schedulers.slurm import slurm_walltime
from . import Fact, NodeShape, gpu_shape, told, unconfirmed
from .queues import queue_facts, shape_facts

UNLIMITED = {"UNLIMITED", "INFINITE", "NONE", "N/A"}


def records(text: str, head: str) -> list[dict[str, str]]:
    """Each `head=...` record's key=value fields (values with spaces keep their first word)."""
    chunks = re.split(rf"(?=\b{head}=)", text)
    return [dict(re.findall(r"(\w+)=(\S*)", chunk)) for chunk in chunks if chunk.lstrip().startswith(f"{head}=")]


def _count(value: Optional[str]) -> Optional[int]:
    return int(value) if value and value.isdigit() else None


def partitions(text: str) -> list[dict]:
    """Each partition: name, max_walltime (None: unlimited), max_nodes (None: unlimited), min_nodes,
    default, total_nodes, qos."""
    rows = []
    for fields in records(text, "PartitionName"):
        max_time = fields.get("MaxTime", "UNLIMITED")
        rows.append({"name": fields["PartitionName"], "default": fields.get("Default") == "YES",
                     "max_walltime": None if max_time.upper() in UNLIMITED else slurm_walltime(max_time),
                     "max_nodes": _count(fields.get("MaxNodes")), "min_nodes": max(1, _count(fields.get("MinNodes")) or 1),
                     "total_nodes": _count(fields.get("TotalNodes")), "qos": fields.get("QoS", "N/A"),
                     "state": fields.get("State", "UP")})
    return rows


def gres_gpus(gres: str) -> tuple[int, str]:
    """(count, type) of the GPUs in a node's Gres (gpu:4, gpu:a100:4(S:0-1), gpu:h100:4,nvme:1)."""
    for item in gres.split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] == "gpu" and len(parts) > 1 and parts[-1].isdigit():
            return int(parts[-1]), parts[1] if len(parts) == 3 else ""
    return 0, ""


def nodes(text: str) -> list[NodeShape]:
    shapes = []
    for fields in records(text, "NodeName"):
        gpus, gpu_type = gres_gpus(fields.get("Gres", ""))
        cores = (_count(fields.get("Sockets")) or 1) * (_count(fields.get("CoresPerSocket")) or 0)
        cpus = _count(fields.get("CPUTot")) or cores
        queues = tuple(p for p in fields.get("Partitions", "").split(",") if p)
        shapes.append(NodeShape(gpus, gpu_type, cores or cpus, cpus, queues, fields.get("Arch", "")))
    return shapes


def config(text: str) -> dict[str, str]:
    """`scontrol show config`'s `Name = value` lines."""
    return dict((m.group(1), m.group(2).strip()) for m in re.finditer(r"(?m)^(\w+)\s*=\s*(.*)$", text))


def associations(text: str) -> list[str]:
    """The accounts of `sacctmgr -n -P show assoc user=$USER format=Account,Partition,QOS`, in order."""
    accounts = [line.split("|")[0] for line in text.splitlines() if line.strip()]
    return list(dict.fromkeys(a for a in accounts if a))


def qos_limits(text: str) -> list[str]:
    """`name: MaxWall=..., MaxTRES=...` of each QOS (`sacctmgr -n -P show qos format=Name,MaxWall,MaxTRES`)."""
    rows = []
    for line in text.splitlines():
        name, _, rest = line.partition("|")
        wall, _, tres = rest.partition("|")
        if name.strip():
            limits = [f"MaxWall={wall}"] * bool(wall) + [f"MaxTRES={tres}"] * bool(tres)
            rows.append(f"{name}: {', '.join(limits) or 'no limits'}")
    return rows


def mpi_plugins(text: str) -> list[str]:
    """The plugin names `srun --mpi=list` prints, one a line (older releases prefix "srun: ")."""
    words = (line.strip().removeprefix("srun:").strip() for line in text.splitlines())
    return [word for word in words if re.fullmatch(r"[\w.-]+", word)]


def facts(probe) -> dict[str, Fact]:
    found: dict[str, Fact] = {"queue_directive": told("partition", "slurm_partitions")}
    parts = partitions(probe("slurm_partitions") or "")
    node_text = probe("slurm_nodes")
    shapes = nodes(node_text) if node_text is not None else []
    shape = gpu_shape(shapes)
    found.update(shape_facts(shape, "slurm_nodes"))
    found.update(queue_facts(parts, shape, "slurm_partitions"))
    conf_text = probe("slurm_config")
    conf = config(conf_text) if conf_text is not None else {}
    if conf:
        enforce = conf.get("AccountingStorageEnforce", "none")
        found["account_required"] = told("associations" in enforce, "slurm_config")
        found["cluster_name"] = told(conf.get("ClusterName", ""), "slurm_config")
        found["cpu_binding"] = told(conf.get("TaskPluginParam", "") or "none", "slurm_config")
        found["mpi_default"] = told(conf.get("MpiDefault", "none"), "slurm_config")
        cons_tres = "cons_tres" in conf.get("SelectType", "")
        found["gpu_request"] = told("--gpus-per-node={gpus}" if cons_tres else "--gres=gpu:{gpus}", "slurm_config")
    else:
        found["account_required"] = unconfirmed(True, "slurm_config")
        found["gpu_request"] = unconfirmed("--gres=gpu:{gpus}", "slurm_config")
    assoc = probe("slurm_assoc")
    found["accounts"] = told(associations(assoc), "slurm_assoc") if assoc is not None else unconfirmed([], "slurm_assoc")
    qos = probe("slurm_qos")
    found["qos"] = told(qos_limits(qos), "slurm_qos") if qos is not None else unconfirmed([], "slurm_qos")
    mpi = probe("slurm_mpi")
    found["mpi_plugins"] = told(mpi_plugins(mpi), "slurm_mpi") if mpi is not None else unconfirmed([], "slurm_mpi")
    return found
