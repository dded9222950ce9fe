"""IBM Spectrum LSF answers as facts: `bqueues -l` (queues, RUNLIMIT), `bhosts -w` (slots per host),
`lshosts -gpu -w` (GPUs per host and their model), as the LSF command reference prints them
(https://www.ibm.com/docs/en/spectrum-lsf/10.1.0?topic=reference-bqueues and
https://www.ibm.com/docs/en/SSWRJV_10.1.0/lsf_gpu/lsf_gpu_lshosts.html, read 2026-11-29) and as a
real LSF 10.1.0.6 host printed them (tests/data/discover/kilenc). A stand-in: no registry ships LSF,
so this is tested on recorded public outputs. LSF has no launch template base yet: its profile lists
facts and no launch variants."""

from __future__ import annotations

import re
from collections import Counter
from typing import Optional

from . import Fact, NodeShape, told, unconfirmed
from .queues import queue_facts, shape_facts


def queues(text: str) -> list[dict]:
    rows = []
    for block in re.split(r"(?m)^QUEUE:\s*", text)[1:]:
        name = block.split()[0]
        limits = re.findall(r"RUNLIMIT\s*\n\s*([\d.]+)\s*min", block)  # the MAXIMUM one comes last
        minutes = int(float(limits[-1])) if limits else None
        rows.append({"name": name, "default": "default queue" in block.lower(),
                     "max_walltime": f"{minutes // 60:02d}:{minutes % 60:02d}:00" if minutes else None, "max_nodes": None})
    return rows


# Without -w, lshosts cuts the gpu_model column at 15 characters (a real host printed
# "TeslaV100_PCIE_" for TeslaV100_PCIE_32GB): a name that fills it may be cut.
NARROW_COLUMN = 15


def gpu_models(text: str) -> dict[str, list[str]]:
    """Each host's GPU models. lshosts -gpu names the host on its first GPU's line only; the lines
    of its other GPUs start blank (IBM's example: hosta 0 ..., then '  1 ...')."""
    hosts: dict[str, list[str]] = {}
    host = None
    for line in text.splitlines()[1:]:
        fields = line.split()
        if fields and not line[0].isspace():
            host, fields = fields[0], fields[1:]
        if host and len(fields) > 1 and fields[0].isdigit():
            hosts.setdefault(host, []).append(fields[1])
    return hosts


def shape(hosts: str, gpus: Optional[str]) -> Optional[NodeShape]:
    """The GPU host kind: its GPU count and model, and its job slots (bhosts MAX). Slots are what
    LSF counts, cores or hardware threads as the site set them, so cores stay unconfirmed."""
    slots = {row[0]: int(row[3]) for row in (line.split() for line in hosts.splitlines()[1:])
             if len(row) > 3 and row[3].isdigit()}
    if not slots:
        return None
    models = gpu_models(gpus or "")
    kinds = Counter((len(found), found[0], slots.get(host, 0)) for host, found in models.items())
    if kinds:
        count, model, cpus = kinds.most_common(1)[0][0]
    else:
        count, model, cpus = 0, "", Counter(slots.values()).most_common(1)[0][0]
    return NodeShape(count, model, cpus, cpus, cores_known=False)


def facts(probe) -> dict[str, Fact]:
    found: dict[str, Fact] = {"queue_directive": told("queue", "lsf_queues")}
    node = shape(probe("lsf_hosts") or "", probe("lsf_gpus"))
    found.update(shape_facts(node if node and node.gpus else None, "lsf_gpus"))
    if node and len(node.gpu_type) == NARROW_COLUMN:
        found["gpu_type"] = unconfirmed(node.gpu_type, "lsf_gpus")
    found.update(queue_facts(queues(probe("lsf_queues") or ""), None, "lsf_queues"))
    found["account_required"] = unconfirmed(True, "lsf_queues")
    return found
