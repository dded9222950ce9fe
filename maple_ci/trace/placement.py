"""The emulated allocation the trace's stand-in (standin.py) answers from, and where a launch's ranks
land in it: this node, the job's nodes, GPUs per node, and the shape (nodes, ranks per node, ranks in
all) of an MPI-style launch or a per-node launcher's workers, by the launcher's grammar and its documented
defaults. Stdlib only: imported inside the sandbox (copied there by sandbox.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from launch_options import count_ranks, last  # bound in from maple_ci/launchers/options.py
import ranks  # maple_ci/trace/ranks.py

ALLOC = json.loads((Path(os.environ["MAPLE_TRACE_HOME"]) / "alloc.json").read_text())


def node() -> str:
    return os.environ.get("MAPLE_TRACE_NODE") or ALLOC["nodes"][0]


def hosts_of(path: str) -> list:
    try:
        names = [line.split()[0] for line in Path(path).read_text().splitlines() if line.strip()]
    except OSError:
        return []
    return list(dict.fromkeys(names))


def gpus() -> int:
    return int(ALLOC["gpus_per_node"])


def placement(g: dict, opts: dict) -> tuple:
    """(nodes the ranks run on, ranks per node, ranks in all) of one launch by the launcher of grammar `g`."""

    def value(option):  # an option left out counts at its documented default (jsrun's -a 1)
        return ranks.number(last(opts, option) or g["trace"].get("option_defaults", {}).get(option))

    hostfile = last(opts, "hostfile")
    nodes = hosts_of(hostfile) if hostfile else []
    count = value("nodes") or (len(nodes) if nodes else int(os.environ.get("MAPLE_TRACE_NNODES", len(ALLOC["nodes"]))))
    # srun(1) -r N (https://slurm.schedmd.com/srun.html, read 2026-11-29; the local cluster): from node N of the job's
    offset = ranks.number(last(opts, "relative")) or 0
    nodes = (nodes or job_nodes())[offset:offset + count] or [node()]
    world, per_node = count_of(g, "world", value), count_of(g, "per_node", value)
    if world is None and per_node is None and g["trace"].get("default_per_node") == "slots":
        # the host file's slots, else the allocation's: its task count (--ntasks, --ntasks-per-node x nodes,
        # mpiprocs, LSF -n), else one a node
        world = (hostfile and ranks.hostfile_slots(hostfile)) or int(ALLOC.get("ntasks") or len(nodes))
    if per_node is None:
        per_node = -(-world // len(nodes)) if world else default_per_node(g)
    if world is None:
        world = per_node * len(nodes)
    return nodes, per_node, world


def job_nodes() -> list:
    listed = os.environ.get("MAPLE_TRACE_JOB_NODES")
    return listed.split(",") if listed else list(ALLOC["nodes"])


def count_of(g: dict, which: str, value) -> int | None:
    return count_ranks(g["ranks"].get(which, ()), value)


def default_per_node(g: dict) -> int:
    """What a launcher starts per node when no option says: its documented default (grammars.yaml)."""
    default = g["trace"].get("default_per_node", 1)
    if default == "gpus":
        return max(1, ranks.visible_devices(os.environ, gpus()))
    if default == "slots":  # a host file's line is one slot
        return 1
    if default == "tasks":
        return ranks.number(os.environ.get(ALLOC["tasks_per_node_var"] or "")) or 1
    return int(default)


def dl_shape(g: dict, settings: dict) -> tuple:
    """(workers per node, nodes, this node's rank) from the launcher's options and documented defaults."""
    t = g["trace"]
    nodes = ranks.number(settings.get(t.get("nodes_option", ""))) or 1
    total = ranks.number(settings.get(t.get("total_option", "")))
    per_node = ranks.number(settings.get(t.get("per_node_option", "")))
    if str(settings.get(t.get("per_node_option", ""))) in ("gpu", "auto"):
        per_node = max(1, ranks.visible_devices(os.environ, gpus()))
    if per_node is None:
        per_node = -(-total // nodes) if total else default_per_node(g)
    node_rank = ranks.number(settings.get(t.get("node_rank_option", "")))
    if node_rank is None:
        node_rank = node_index()
    return per_node, nodes, node_rank


def node_index() -> int:
    names = job_nodes()
    return names.index(node()) if node() in names else 0
