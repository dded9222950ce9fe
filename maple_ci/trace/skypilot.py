"""The trace of a SkyPilot task: its `run` on each node of an emulated allocation, as SkyPilot runs
it, with the variables SkyPilot sets per node (SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS; the task's
shape gives SKYPILOT_NUM_NODES and SKYPILOT_NUM_GPUS_PER_NODE). The stand-in `skypilot-nodes`
(standin.py) is SkyPilot's part: the trace view hands it `run` on its standard input.

Source: https://docs.skypilot.co/en/stable/running-jobs/environment-variables.html and
distributed-jobs.html (read 2026-11-29): setup then run on every node; the node addresses one a
line, the head node first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..errors import MapleError
from ..skypilot import accelerators, is_task, read_task, script_view

_END = "MAPLE_SKYPILOT_RUN"


def trace_view(text: str, name: str) -> str:
    """The task's script view with `run` handed to the per-node stand-in (a quoted here-document:
    nothing in it is expanded before each node's shell runs it)."""
    data = read_task(text)
    if any(line.strip() == _END for line in data["run"].splitlines()):
        raise MapleError(f"the task's run has a line {_END}, which the trace uses to end it")
    view = script_view(text, name)
    head = view[: len(view) - len(data["run"].rstrip("\n")) - 1]
    return f"{head}skypilot-nodes <<'{_END}'\n{data['run'].rstrip()}\n{_END}\n"


# What the stand-in sets on each node; the variables the same on every node are the job's (task_env).
NODE_VARS = frozenset({"SKYPILOT_NODE_RANK"})


@dataclass(frozen=True)
class TracedTask:
    view: str  # what the trace runs
    nodes: int
    gpus: Optional[int]  # per node, from resources.accelerators

    def job_env(self, alloc) -> dict:
        """The variables SkyPilot sets alike on every node of the task (the node rank aside)."""
        addresses = alloc.as_data()["addresses"]
        env = {"SKYPILOT_NUM_NODES": str(len(alloc.nodes)), "SKYPILOT_NODE_IPS": "\n".join(addresses[n] for n in alloc.nodes)}
        return env | ({"SKYPILOT_NUM_GPUS_PER_NODE": str(self.gpus)} if self.gpus else {})


def traced_task(text: str, name: str) -> Optional[TracedTask]:
    """A SkyPilot task as the trace runs it; None for any other script."""
    if not is_task(text):
        return None
    task = read_task(text)
    return TracedTask(trace_view(text, name), task.get("num_nodes", 1), accelerators(task.get("resources"))[1])
