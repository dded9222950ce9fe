"""`maple trace`: run a launch script with real bash on an emulated allocation and record what
every rank would run, without running the program (DESIGN.md, "The check is independent of the
reader"). Bash expands the script; stand-ins for the scheduler's commands and the launchers
(sandbox.py, standin.py) expand ranks by the launcher registry's grammar and record each program
with its argv, cwd, node and environment. Script content runs only in the sandbox.
"""

from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .. import schedulers
from ..errors import MapleError
from ..files import checkout_root
from ..launchers.options import python_command
from .allocation import Allocation, allocation_for, grammars
from .sandbox import Limits, Sandbox, SharedCopy, bwrap
from .skypilot import traced_task
from .visible import visible_list

__all__ = ["Allocation", "Limits", "Rank", "Trace", "trace_script", "trace_with_ports"]
# Traces of one command at a time: each is mostly one process starting the next, and every process
# of every trace counts towards the one process limit (Limits.processes) of the user it runs as.
TRACES_AT_ONCE = 3

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
            words = python_command(words[1:])[1]
        return words

    @property
    def interpreter_options(self) -> list:
        """The options python itself reads (`-u`, `-W ignore`), before the program."""
        python = bool(self.argv) and Path(self.argv[0]).name.startswith("python")
        return python_command(self.argv[1:])[0] if python else []


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
    job_env: dict = field(default_factory=dict)  # the emulated scheduler's variables

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


def _own_vars(via: list, concept: str) -> tuple:
    """The variables the innermost launcher sets for `concept` (rank, world): they name the rank before
    any the job inherited (Open MPI's ranks under Slurm all carry the batch step's SLURM_PROCID=0)."""
    block = (grammars().get(via[-1]) or {}).get("trace") or {} if via else {}
    return tuple((block.get("env") or {}).get(concept, ()))


def _rank(event: dict, job_env: dict) -> Rank:
    env = event.get("env", {})
    launched = bool(env.get("MAPLE_TRACE_VIA"))
    listed = visible_list(env)
    devices = ",".join(listed) if listed is not None else env.get("ZE_AFFINITY_MASK", "all")
    own = {k: v for k, v in env.items() if not k.startswith(_INTERNAL) and k not in _INTERNAL
           and (k in RANK_VARS or job_env.get(k) != v)}
    via = [v for v in env.get("MAPLE_TRACE_VIA", "").split(",") if v]
    return Rank(rank=_first_int(env, (*_own_vars(via, "rank"), *_RANK_ORDER)) if launched else None,
                world=_first_int(env, (*_own_vars(via, "world"), *_WORLD_ORDER)) if launched else None,
                node=event["node"], argv=event["argv"], cwd=event["cwd"],
                via=via, env=own, devices=devices)


def trace_script(path: Path, cluster: Optional[str] = None, nodes: Optional[int] = None, args: tuple = (),
                 trusted: bool = False, limits: Limits = Limits(), checkout: Optional[Path] = None,
                 text: Optional[str] = None, gpus: Optional[int] = None, shared: Optional[SharedCopy] = None) -> Trace:
    """The trace of one script. `trusted` allows running without the namespace sandbox (bubblewrap
    missing) for a user's own script; untrusted content is never traced outside it. `text` (a port)
    is traced in place of the file's own text, from the same folder of the checkout; `shared`, the
    checkout's copy that the other traces of the command use too."""
    path = Path(path)
    text, task, alloc = _planned(path, text, cluster, nodes, gpus)
    isolated = bwrap() is not None
    if not isolated and not trusted:
        raise MapleError("maple trace runs untrusted script content only inside bubblewrap (bwrap), which is not "
                         "installed here: install it (apt-get install bubblewrap), or pass --trusted for your own script")
    root = Path(checkout or checkout_root(path)).resolve()
    started = time.monotonic()
    box = Sandbox(root, alloc.as_data(), grammars(), isolated, shared)
    try:
        script = box.place(path.resolve().relative_to(root), text)
        # submitted from the script's own folder, as its port's header asks
        job_env = alloc.job_env(box.inside(script.parent), path.name, box.inside(box.home)) | (task.job_env(alloc) if task else {})
        if alloc.node_file_var:
            unit = schedulers.get(alloc.scheduler)
            (box.home / "nodefile").write_text(unit.node_file(alloc.nodes, alloc.ntasks_per_node or alloc.cpus_per_node))
        done = box.run(script, list(args), job_env, limits)
        trace = _collect(box.events(), job_env, Trace(str(path), alloc, sandboxed=isolated, job_env=job_env))
    finally:
        box.close()
    trace.exit_code, trace.stderr, trace.seconds = done.returncode, done.stderr.decode(errors="replace")[-4000:], \
        time.monotonic() - started
    # killed by a limit: directly (a negative status), or bash under bwrap, which exits 128 + the signal
    if abs(done.returncode) % 128 in (signal.SIGKILL, signal.SIGXCPU) and done.returncode not in (0, signal.SIGKILL):
        raise MapleError(f"{path}: the trace ran past its limit ({limits.wall_s:.0f} s of wall-clock time or "
                         f"{limits.cpu_s} s of CPU) and was stopped (a loop that does not end, or a command that "
                         "waits): nothing it did outside the sandbox remains")
    return trace


def _planned(path: Path, text: Optional[str], cluster: Optional[str], nodes: Optional[int], gpus: Optional[int]):
    """(the text bash runs, the SkyPilot task it comes from or None, the allocation it runs on)."""
    if not path.is_file():
        raise MapleError(f"{path}: no such script")
    text = path.read_text(errors="replace") if text is None else text
    task = traced_task(text, path.name)  # a SkyPilot task: its run on each of its nodes
    if task:
        text, nodes = task.view, nodes or task.nodes
    return text, task, allocation_for(text, cluster, nodes, (task and task.gpus) or gpus)


def trace_with_ports(path: Path, ports: list, cluster: Optional[str] = None, **options) -> tuple:
    """The source's trace and each port's, `ports` being (target cluster, port text) pairs; each trace
    is a MapleError where it could not run. Every trace is a sandbox and processes of its own, so they
    run side by side (a trace mostly waits for its processes to start) on one copy of the checkout,
    and the result is the one they give one after another. A port runs on the source's node count."""
    def run(job):
        try:
            return job()
        except MapleError as error:
            return error
    nodes = run(lambda: len(_planned(Path(path), None, cluster, None, options.get("gpus"))[2].nodes))
    if isinstance(nodes, MapleError):
        return nodes, [nodes for _ in ports]
    port_options = {key: value for key, value in options.items() if key != "gpus"}
    with SharedCopy() as shared, ThreadPoolExecutor(max_workers=TRACES_AT_ONCE) as pool:
        source = pool.submit(run, lambda: trace_script(path, cluster=cluster, shared=shared, **options))
        traced = [pool.submit(run, lambda target=target, text=text: trace_script(
            path, cluster=target, nodes=nodes, text=text, shared=shared, **port_options)) for target, text in ports]
        return source.result(), [job.result() for job in traced]


def _collect(events: list, job_env: dict, trace: Trace) -> Trace:
    for event in events:
        kind = event.get("event")
        if kind == "program":
            trace.ranks.append(_rank(event, job_env))
        elif kind == "launch":
            trace.launches.append({k: event.get(k) for k in ("launcher", "ranks", "per_node", "nodes", "command", "argv")})
            needed = event.get("gpus_per_node")
            if trace.allocation.gpus_assumed and needed and needed > trace.allocation.gpus_per_node:
                trace.allocation.gpus_per_node = needed  # Summit's `jsrun -r 6 -g 1`: its nodes have six
        elif kind == "submit":
            trace.submitted.append(event["argv"])
        elif kind in ("not_run", "refused"):
            trace.not_run.append(event["argv"])
    return trace



@dataclass
class TracedProgram:
    words: list  # the program and its arguments
    via: list = field(default_factory=list)  # the launchers it came through, outermost first (stand-in names)
    world: Optional[int] = None  # the ranks its launch started
    nodes: Optional[int] = None  # on the trace's allocation of this many nodes


def traced_program(path: Path, cluster: Optional[str] = None, trusted: bool = False) -> Optional[TracedProgram]:
    """The program and arguments rank 0 runs, as the trace sees them, with its launchers and world
    (issue 25 C: where static reading finds no program, the run shows it). Untrusted data like the
    script itself: the port quotes it as it quotes anything read from a script. None when the trace
    cannot run here or sees none."""
    if bwrap() is None and not trusted:
        return None
    try:
        trace = trace_script(path, cluster=cluster, trusted=trusted)
    except MapleError:
        return None
    launched = [r for r in trace.ranks if r.rank == 0] or trace.ranks[-1:]
    if launched and launched[-1].program:
        return TracedProgram(launched[-1].program, list(launched[-1].via), launched[-1].world, len(trace.allocation.nodes))
    # a command the trace does not know (a site's own launcher, `run-multinode.sh train.py`) handed a
    # Python file, or the file run as the command itself (by its shebang, or after an interpreter the
    # job looks up at a site path printed nothing here: `$(command -v /opt/py/bin/python3) t.py`): the
    # file and what follows it are the program
    for argv in reversed(trace.not_run):
        start = next((i for i, word in enumerate(argv) if word.endswith(".py")), None)
        if start is not None:
            return TracedProgram(argv[start:])
    return None
