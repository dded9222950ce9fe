"""Flux answers as facts: `flux resource list` (nodes, cores, GPUs by state) and `flux queue list`
(queues and their limits), columns as flux-resource(1) and flux-queue(1) print them
(https://flux-framework.readthedocs.io/projects/flux-core/en/latest/man1/, read 2026-11-29).
A stand-in: no registry ships Flux's system instance, so this is tested on recorded public outputs."""

from __future__ import annotations

import re
from typing import Optional

from . import Fact, NodeShape, told, unconfirmed
from .queues import queue_facts, shape_facts

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def table(text: str, first: str) -> list[dict[str, str]]:
    """The rows under the header line holding `first`, keyed by header words."""
    lines = [line for line in text.splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if first in line.split()), None)
    if start is None:
        return []
    header = lines[start].split()
    return [dict(zip(header, line.split())) for line in lines[start + 1:] if len(line.split()) >= len(header) - 1]


def duration(value: str) -> Optional[str]:
    """Flux Standard Duration (30m, 1d, 12h, inf) as HH:MM:SS; None when unlimited."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd]?)", value)
    if not match:
        return None
    seconds = int(float(match.group(1)) * _UNITS[match.group(2) or "s"])
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def shape(text: str) -> Optional[NodeShape]:
    """The node shape from the totals over every state (free, allocated, down)."""
    rows = table(text, "NNODES")
    total = {column: sum(int(r.get(column, 0)) for r in rows if r.get(column, "").isdigit()) for column in ("NNODES", "NCORES", "NGPUS")}
    if not total["NNODES"]:
        return None
    per_node = {column: total[column] // total["NNODES"] for column in total}
    return NodeShape(per_node["NGPUS"], "", per_node["NCORES"], per_node["NCORES"])


def queues(text: str) -> list[dict]:
    rows = []
    for row in table(text, "TLIMIT"):
        name = row.get("QUEUE", "")
        nodes = row.get("NNODES", "").rpartition("-")[2]
        rows.append({"name": name.rstrip("*"), "default": name.endswith("*"),
                     "max_walltime": duration(row.get("TLIMIT", "")), "max_nodes": int(nodes) if nodes.isdigit() else None})
    return [row for row in rows if row["name"]]


def facts(probe) -> dict[str, Fact]:
    found: dict[str, Fact] = {"queue_directive": told("queue", "flux_queues")}
    node = shape(probe("flux_resources") or "")
    found.update(shape_facts(node if node and node.gpus else None, "flux_resources"))
    queue_text = probe("flux_queues")
    found.update(queue_facts(queues(queue_text) if queue_text else [], None, "flux_queues"))
    found["account_required"] = unconfirmed(True, "flux_queues")
    return found
