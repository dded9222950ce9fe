"""IBM Spectrum LSF answers as facts: `bqueues -l` (queues, RUNLIMIT), `bhosts -w` (slots per host),
`lshosts -gpu` (GPUs per host and their model), as the LSF command reference prints them
(https://www.ibm.com/docs/en/spectrum-lsf/10.1.0?topic=reference-bqueues, read 2026-11-29).
A stand-in: no registry ships LSF, so this is tested on recorded public outputs. LSF has no launch
template base yet: its profile lists facts and no launch variants."""

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


def shape(hosts: str, gpus: Optional[str]) -> Optional[NodeShape]:
    slots = Counter(int(row[3]) for row in (line.split() for line in hosts.splitlines()[1:]) if len(row) > 3 and row[3].isdigit())
    if not slots:
        return None
    per_host = Counter(line.split()[0] for line in (gpus or "").splitlines()[1:] if len(line.split()) > 2)
    models = [line.split()[2] for line in (gpus or "").splitlines()[1:] if len(line.split()) > 2]
    cores = slots.most_common(1)[0][0]
    count = per_host.most_common(1)[0][1] if per_host else 0
    return NodeShape(count, models[0] if models else "", cores, cores)


def facts(probe) -> dict[str, Fact]:
    found: dict[str, Fact] = {"queue_directive": told("queue", "lsf_queues")}
    node = shape(probe("lsf_hosts") or "", probe("lsf_gpus"))
    found.update(shape_facts(node if node and node.gpus else None, "lsf_gpus"))
    found.update(queue_facts(queues(probe("lsf_queues") or ""), None, "lsf_queues"))
    found["account_required"] = unconfirmed(True, "lsf_queues")
    return found
