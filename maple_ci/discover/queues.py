"""What every scheduler's reader gives the same way: the GPU node's shape and its queues as facts."""

from __future__ import annotations

from typing import Optional

from . import Fact, NodeShape, told, unconfirmed

# A queue with no time limit still needs one in a profile (HH:MM:SS): the longest the field takes.
NO_LIMIT = "9999:00:00"


def shape_facts(shape: Optional[NodeShape], key: str) -> dict[str, Fact]:
    """gpus_per_node, gpu_type, cores_per_node, scheduler_cpus_per_node, cpu_arch of the GPU node kind."""
    if shape is None:
        return {"gpus_per_node": unconfirmed(1, key), "gpu_type": unconfirmed("", key),
                "cores_per_node": unconfirmed(1, key)}
    found = {"gpus_per_node": told(shape.gpus, key), "gpu_type": told(shape.gpu_type, key),
             "cores_per_node": (told if shape.cores_known else unconfirmed)(shape.cores, key)}
    if shape.cpus != shape.cores or not shape.cores_known:
        found["scheduler_cpus_per_node"] = told(shape.cpus, key)
    if shape.arch:
        found["cpu_arch"] = told(shape.arch, key)
    return found


def queue_facts(queues: list[dict], shape: Optional[NodeShape], key: str) -> dict[str, Fact]:
    """The queues that hold the GPU node kind (all of them when the nodes' queues are not known),
    as profile rows; the scheduler's default first among equals."""
    if shape and shape.queues:
        queues = [q for q in queues if q["name"] in shape.queues] or queues
    rows = []
    for queue in queues:
        max_nodes = queue.get("max_nodes") or queue.get("total_nodes")
        row = {"name": queue["name"], "max_walltime": queue.get("max_walltime") or NO_LIMIT,
               "max_nodes": max_nodes or 1}
        if queue.get("min_nodes", 1) > 1:
            row["min_nodes"] = queue["min_nodes"]
        if queue.get("default"):
            row["default"] = True
        notes = ["no time limit"] * (not queue.get("max_walltime")) + ["node limit unknown"] * (not max_nodes)
        if notes:
            row["note"] = "; ".join(notes)
        rows.append(row)
    if not rows:  # no queue answered: the GPU node's own queue names if it gave them, limits unknown
        names = (shape.queues if shape else ()) or ("unconfirmed",)
        return {"queues": unconfirmed([{"name": name, "max_walltime": "01:00:00", "max_nodes": 1} for name in names], key)}
    return {"queues": told(rows, key)}
