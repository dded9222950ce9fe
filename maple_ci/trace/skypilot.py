"""The trace of a SkyPilot task: its `run` on each node of an emulated allocation, as SkyPilot runs
it, with the variables SkyPilot sets per node (SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS; the task's
shape gives SKYPILOT_NUM_NODES and SKYPILOT_NUM_GPUS_PER_NODE). The stand-in `skypilot-nodes`
(standin.py) is SkyPilot's part: the trace view hands it `run` on its standard input.

Source: https://docs.skypilot.co/en/stable/running-jobs/environment-variables.html and
distributed-jobs.html (read 2026-11-29): setup then run on every node; the node addresses one a
line, the head node first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..errors import MapleError
from ..skypilot import read_task, script_view
from . import Trace, trace_script

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


def trace_task(path: Path, trusted: bool = False, text: Optional[str] = None) -> Trace:
    """The trace of the SkyPilot task at `path` (or `text`, from that folder) on its num_nodes nodes."""
    text = Path(path).read_text(errors="replace") if text is None else text
    nodes = read_task(text).get("num_nodes", 1)
    return trace_script(Path(path), nodes=nodes, trusted=trusted, text=trace_view(text, Path(path).name))
