"""PBS Pro/OpenPBS answers as facts: `qstat -Qf` (queues), `qstat -Bf` (the default queue),
`pbsnodes -a` (resources_available.ncpus/ngpus/mem per node). Attribute names as the PBS Reference
Guide gives them (https://help.altair.com/2022.1.0/PBS%20Professional/PBSReferenceGuide2022.1.pdf,
read 2026-11-29). A stand-in: no registry ships PBS, so this is tested on recorded public outputs."""

from __future__ import annotations

import re
from typing import Optional

from . import Fact, NodeShape, gpu_shape, told, unconfirmed
from .queues import queue_facts, shape_facts


def blocks(text: str, head: str) -> list[tuple[str, dict[str, str]]]:
    """(name, attributes) of each block: `Queue: name` (head "Queue: ") or an unindented node name
    (head ""), then indented `key = value` lines."""
    found: list[tuple[str, dict[str, str]]] = []
    for line in text.splitlines():
        attribute = re.match(r"^\s+([\w.]+)\s*=\s*(.*)$", line)
        if attribute and found:
            found[-1][1][attribute.group(1)] = attribute.group(2).strip()
        elif line.strip() and not line[0].isspace() and line.startswith(head):
            found.append((line[len(head):].strip(), {}))
    return found


def _int(value: Optional[str]) -> Optional[int]:
    return int(value) if value and value.isdigit() else None


def walltime(value: Optional[str]) -> Optional[str]:
    """PBS [[HH:]MM:]SS as HH:MM:SS."""
    if not value or not re.fullmatch(r"\d+(:\d+){0,2}", value):
        return None
    parts = [0, 0, 0] + [int(p) for p in value.split(":")]
    hours, minutes, seconds = parts[-3:]
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}"


def _gpu_name(attrs: dict[str, str]) -> str:
    """The site's GPU resource, under the names sites give it (ALCF: gputype)."""
    return next((attrs[f"resources_available.{name}"] for name in ("gputype", "gpu_model", "gpu_type")
                 if f"resources_available.{name}" in attrs), "")


def nodes(text: str) -> list[NodeShape]:
    shapes = []
    for _, attrs in blocks(text, ""):
        cpus = _int(attrs.get("resources_available.ncpus")) or 0
        queue = attrs.get("queue") or attrs.get("resources_available.Qlist", "")
        shapes.append(NodeShape(_int(attrs.get("resources_available.ngpus")) or 0,
                                _gpu_name(attrs),
                                cpus, cpus, tuple(q for q in queue.split(",") if q), cores_known=False))
    return shapes


def queues(text: str, default: str, shape: Optional[NodeShape]) -> list[dict]:
    rows = []
    for name, attrs in blocks(text, "Queue: "):
        max_nodes = _int(attrs.get("resources_max.nodect")) or _int(attrs.get("resources_max.nodes"))
        if max_nodes is None and shape and shape.cpus and _int(attrs.get("resources_max.ncpus")):
            max_nodes = _int(attrs["resources_max.ncpus"]) // shape.cpus
        rows.append({"name": name, "default": name == default, "max_walltime": walltime(attrs.get("resources_max.walltime")),
                     "max_nodes": max_nodes, "min_nodes": _int(attrs.get("resources_min.nodect")) or 1})
    return rows


def resources(text: str) -> list[str]:
    """The names of the resources nodes offer (resources_available.<name>): what `-l select=` takes."""
    return sorted({m.group(1) for m in re.finditer(r"resources_available\.(\w+)\s*=", text)})


def facts(probe) -> dict[str, Fact]:
    found: dict[str, Fact] = {"queue_directive": told("queue", "pbs_queues")}
    node_text = probe("pbs_nodes")
    shape = gpu_shape(nodes(node_text)) if node_text is not None else None
    if node_text is not None:
        found["resources"] = told(resources(node_text), "pbs_nodes")
    found.update(shape_facts(shape, "pbs_nodes"))
    server = probe("pbs_server") or ""
    default = re.search(r"default_queue\s*=\s*(\S+)", server)
    found.update(queue_facts(queues(probe("pbs_queues") or "", default.group(1) if default else "", shape), shape, "pbs_queues"))
    # PBS sites charge a project (-A) by their own rule; no query says whether one is required.
    found["account_required"] = unconfirmed(True, "pbs_server")
    return found
