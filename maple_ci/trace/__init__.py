"""`maple trace`: run a launch script with real bash on an emulated allocation and record what
every rank would run, without running the program (DESIGN.md, "The check is independent of the
reader"). Bash expands the script; stand-ins for the scheduler's commands and the launchers
(sandbox.py, standin.py) expand ranks by the launcher registry's grammar and record each program
with its argv, cwd, node and environment. Script content runs only in the sandbox.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..errors import MapleError
from ..files import checkout_root
from .allocation import Allocation, allocation_for, grammars
from .sandbox import Limits, Sandbox, bwrap

__all__ = ["Allocation", "Limits", "Rank", "Trace", "trace_script"]

# What a program reads from its environment that says who it is and where it runs: the trace shows
# these per rank, beside the variables the script itself set.
RANK_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
             "SLURM_PROCID", "SLURM_LOCALID", "PMI_RANK", "PMI_SIZE", "PALS_RANKID", "PALS_LOCAL_RANKID",
             "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "FLUX_TASK_RANK",
             "JSM_NAMESPACE_RANK", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
             "ZE_AFFINITY_MASK")
_RANK_ORDER = ("RANK", "SLURM_PROCID", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "PALS_RANKID", "FLUX_TASK_RANK",
               "JSM_NAMESPACE_RANK")
_WORLD_ORDER = ("WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "FLUX_JOB_SIZE")
_INTERNAL = ("MAPLE_TRACE_", "BASH_ENV", "PATH", "HOME", "USER", "LOGNAME", "LANG", "SHELL", "SHLVL", "PWD", "OLDPWD", "_")


@dataclass
class Rank:
    """One program execution: which rank (None outside any launcher), on which node, with what."""

    rank: Optional[int]
    world: Optional[int]
    node: str
    argv: list
    cwd: str
    via: list  # the launchers it came through, outermost first
    env: dict  # the variables the job set (not the emulated scheduler's), plus the rank variables
    devices: str  # the visible-device list, or "all"

    @property
    def program(self) -> list:
        """argv without the interpreter: what a person calls the program and its arguments."""
        words = list(self.argv)
        if words and Path(words[0]).name.startswith("python"):
            words = words[1:]
            while words and words[0].startswith("-") and words[0] not in ("-m",):
                words = words[1:]
        return words


@dataclass
class Trace:
    script: str
    allocation: Allocation
    ranks: list = field(default_factory=list)  # every program execution, in order
    launches: list = field(default_factory=list)  # each launcher call: name, ranks, per node, command
    not_run: list = field(default_factory=list)  # commands recorded and not run (set-up, queries, sources)
    submitted: list = field(default_factory=list)
    exit_code: int = 0
    stderr: str = ""
    seconds: float = 0.0
    sandboxed: bool = True

    def world(self) -> Optional[int]:
        sizes = {r.world for r in self.ranks if r.world}
        return max(sizes) if sizes else (1 if self.ranks else None)

    def per_node(self) -> dict:
        counts: dict = {}
        for launch in self.launches:
            counts[launch["launcher"]] = launch.get("per_node")
        return counts


def _first_int(env: dict, names: tuple) -> Optional[int]:
    for name in names:
        if str(env.get(name, "")).isdigit():
            return int(env[name])
    return None


def _rank(event: dict, job_env: dict) -> Rank:
    env = event.get("env", {})
    launched = bool(env.get("MAPLE_TRACE_VIA"))
    devices = next((env[n] for n in ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                                     "ZE_AFFINITY_MASK") if n in env), "all")
    own = {k: v for k, v in env.items() if not k.startswith(_INTERNAL) and k not in _INTERNAL
           and (k in RANK_VARS or job_env.get(k) != v)}
    return Rank(rank=_first_int(env, _RANK_ORDER) if launched else None,
                world=_first_int(env, _WORLD_ORDER) if launched else None,
                node=event["node"], argv=event["argv"], cwd=event["cwd"],
                via=[v for v in env.get("MAPLE_TRACE_VIA", "").split(",") if v], env=own, devices=devices)


def trace_script(path: Path, cluster: Optional[str] = None, nodes: Optional[int] = None, args: tuple = (),
                 trusted: bool = False, limits: Limits = Limits(), checkout: Optional[Path] = None,
                 text: Optional[str] = None) -> Trace:
    """The trace of one script. `trusted` allows running without the namespace sandbox (bubblewrap
    missing) for a user's own script; untrusted content is never traced outside it. `text` (a port)
    is traced in place of the file's own text, from the same folder of the checkout."""
    path = Path(path)
    if not path.is_file():
        raise MapleError(f"{path}: no such script")
    isolated = bwrap() is not None
    if not isolated and not trusted:
        raise MapleError("maple trace runs untrusted script content only inside bubblewrap (bwrap), which is not "
                         "installed here: install it (apt-get install bubblewrap), or pass --trusted for your own script")
    root = Path(checkout or checkout_root(path)).resolve()
    text = path.read_text(errors="replace") if text is None else text
    alloc = allocation_for(text, cluster, nodes)
    started = time.monotonic()
    box = Sandbox(root, alloc.as_data(), grammars(), isolated)
    try:
        script = box.work / path.resolve().relative_to(root)
        script = script.with_name(f".maple-trace-{script.name}")
        script.write_text(text)
        job_env = alloc.job_env(box.inside(box.work), path.name, box.inside(box.home))
        if alloc.node_file_var:
            (box.home / "nodefile").write_text("\n".join(alloc.nodes) + "\n")
        done = box.run(script, list(args), job_env, limits)
        trace = _collect(box.events(), job_env, Trace(str(path), alloc, sandboxed=isolated))
    finally:
        box.close()
    trace.exit_code, trace.stderr, trace.seconds = done.returncode, done.stderr.decode(errors="replace")[-4000:], \
        time.monotonic() - started
    if done.returncode == -9:
        raise MapleError(f"{path}: the trace ran past its {limits.wall_s:.0f} s limit and was stopped "
                         "(a loop that does not end, or a command that waits): nothing it did outside the sandbox remains")
    return trace


def _collect(events: list, job_env: dict, trace: Trace) -> Trace:
    for event in events:
        kind = event.get("event")
        if kind == "program":
            trace.ranks.append(_rank(event, job_env))
        elif kind == "launch":
            trace.launches.append({k: event.get(k) for k in ("launcher", "ranks", "per_node", "nodes", "command", "argv")})
        elif kind == "submit":
            trace.submitted.append(event["argv"])
        elif kind in ("not_run", "refused"):
            trace.not_run.append(event["argv"])
    return trace

