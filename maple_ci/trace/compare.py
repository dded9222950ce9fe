"""The trace gate: the source traced on an allocation of its own shape, the port on its target's,
compared per rank. What differs and is not named in the port's header fails the port, naming it.

Compared (rank 0 of each side, and the programs run outside any launcher):
- every program rank 0 runs, word for word after bash expanded both (job variables a port
  translates expand to the same values: $SLURM_NNODES and the port's $NNODES are both 2);
- the process model: processes per node against the node's devices (one per device, one per node);
- the variables the job gives the program (its own exports and a launcher's, such as accelerate's
  ACCELERATE_MIXED_PRECISION), and the launcher variables the program identifies itself by;
- the devices a rank sees, when the source's rank saw more than one;
- the folder rank 0's program runs in (a `cd` the port does not make: its relative paths name other files);
- set-up commands the source ran (pip install, a data step) that the port does not.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from ..errors import MapleError
from ..intent import without_record
from . import Rank, Trace
from ..launchers.options import PYTHON_OPTIONS_NOTE, python_option_env
from .allocation import SITE_VARS, grammars
from .skypilot import NODE_VARS

_TORCH_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
_PER_RANK = re.compile(r"^--local[_-]rank=\d+$")
_SETUP = ("pip", "pip3", "uv", "virtualenv", "git", "wget", "curl", "huggingface-cli", "wandb", "sbatch", "qsub")
# A script that reads its submit-time arguments is traced with one, so that a port that drops them shows.
SUBMIT_ARGS = re.compile(r"\$\{?[@*1-9]")
SAMPLE_ARGS = ("--maple-trace-argument=1",)


@dataclass
class Difference:
    kind: str  # program | setup | processes | env | devices | cwd | none
    message: str
    keys: tuple  # words whose presence in the header's notes names the difference
    other_keys: tuple = ()  # or these: the same difference named from the port's side

    def named_in(self, header: str) -> bool:
        return any(keys and all(key in header for key in keys) for keys in (self.keys, self.other_keys))


def header_of(script: str) -> str:
    """The port's own notes: the comment lines before its first command, its record aside."""
    lines = []
    for line in without_record(script).splitlines()[1:]:
        if line.startswith("#"):
            lines.append(line)
        elif line.strip():
            break
    return "\n".join(lines)


def _shown(words: list) -> str:
    return shlex.join(words)[:300]


def _words(rank: Rank) -> list:
    return [w for w in rank.program if not _PER_RANK.match(w)]


def first_rank(trace: Trace) -> list:
    """The programs of rank 0 (of the first launch that starts one), in order; with no launcher, every
    program the batch shell runs in turn (a loop's repeated `python train.py` too)."""
    launched = [r for r in trace.ranks if r.rank is not None]
    if launched:
        return [r for r in launched if r.rank == 0]
    return list(trace.ranks)


def _per_node(trace: Trace) -> Optional[int]:
    """Processes on the first node (each counted once, whatever it runs in turn)."""
    ranks = [r for r in trace.ranks if r.rank is not None]
    if not ranks:
        return 1 if trace.ranks else None
    return len({r.rank for r in ranks if r.node == ranks[0].node})


def _same_model(source: Trace, port: Trace, p_src: int, p_dst: int) -> bool:
    """The same processes per node, or one per device on both sides."""
    return p_src == p_dst or (p_src == source.allocation.gpus_per_node and p_dst == port.allocation.gpus_per_node)


def _devices_kept(source: Trace, port: Trace, src: Rank, dst: Rank) -> bool:
    """A rank that saw all of its node's devices still does; one that saw several sees as many; one
    bound to one device of several (a wrapper, jsrun -g 1) still is: a program that never picks its
    device (cuda:0) relies on that binding."""
    g_src, g_dst = source.allocation.gpus_per_node, port.allocation.gpus_per_node
    s_src, s_dst = _device_count(src, g_src), _device_count(dst, g_dst)
    if s_src == 1 and g_src > 1:
        return s_dst == 1
    if s_src <= 1:
        return True
    return s_dst == g_dst if s_src == g_src else s_dst >= s_src


def _telling(words: list) -> tuple:
    """Words distinct enough that the header quoting them names them (not `4`, not `-d`)."""
    return tuple(words) if all(len(w) >= 4 and not w.lstrip("-").isdigit() for w in words) else ()


def _program_differences(source: list, port: list) -> list:
    src = [_words(r) for r in source]
    dst = [_words(r) for r in port]
    if not dst:
        return [Difference("program", f"the port starts no program; the source's rank 0 runs {_shown(src[-1])}", ())]
    found = []
    main_src, main_dst = src[-1], dst[-1]
    if main_src != main_dst:
        missing = [w for w in main_src if w not in main_dst]
        extra = [w for w in main_dst if w not in main_src]
        found.append(Difference("program", f"rank 0 runs `{_shown(main_src)}` in the source and `{_shown(main_dst)}` "
                                f"in the port", tuple(missing or extra), _telling(extra)))
    for words in src[:-1]:  # `python3 --version`: python's own options alone run no program
        if words and words not in dst:
            found.append(Difference("setup", f"rank 0 of the source runs `{_shown(words)}` before the program; "
                                    "the port does not", (words[0],) if words else ()))
    return found


def _python_options_kept(source: Rank, port: Rank) -> bool:
    """The port's python runs with the source's options, or the port gives its rank the variables
    python reads for them."""
    if source.interpreter_options == port.interpreter_options:
        return True
    env, kept_out = python_option_env(source.interpreter_options)
    return not port.interpreter_options and not kept_out and all(port.env.get(k) == v for k, v in env.items())


def _env_differences(source: Rank, port: Rank) -> list:
    """The variables the source's program gets and the port's does not. A site's storage variable
    ($PROJECT, $DATA...) the source reassigns reaches its program only because the trace exports the
    stand-in on every cluster; a port that leaves it at the site's value is not a difference."""
    found = []
    for name, value in sorted(source.env.items()):
        if name in _TORCH_VARS or name in launcher_vars():
            continue
        if port.env.get(name) != value and not (name in SITE_VARS and name not in port.env):
            now = "unset" if name not in port.env else f"{port.env[name]!r}"
            found.append(Difference("env", f"the program gets {name}={value!r} in the source and {now} in the port",
                                    (name,)))
    for name in _TORCH_VARS:
        if name in source.env and name not in port.env:
            found.append(Difference("env", f"the source's rank gets {name} from its launcher; the port's does not", (name,)))
    return found


@lru_cache(maxsize=1)
def launcher_vars() -> frozenset:
    """Every variable a launcher sets for its workers (grammars.yaml's trace blocks): compared
    through the process model, not one by one."""
    trace = [g["trace"] or {} for g in grammars().values()]
    return frozenset(name for t in trace for names in [*t.get("env", {}).values(), (t.get("devices") or {}).get("env", ())]
                     for name in names) | {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                                            "ZE_AFFINITY_MASK"} | NODE_VARS  # SkyPilot's node rank, as srun's


def _device_count(rank: Rank, gpus: int) -> int:
    return gpus if rank.devices == "all" else len([d for d in rank.devices.split(",") if d.strip()])


def compare(source: Trace, port: Trace, header: str) -> list[Difference]:
    """Every difference the port's header does not name (an empty list: the port runs the source's
    program as the source ran it)."""
    src, dst = first_rank(source), first_rank(port)
    if not src or stops_itself(port):
        return []  # nothing to compare, or a port that stops before the program and says why (loud)
    found = _program_differences(src, dst)
    if dst and not _python_options_kept(src[-1], dst[-1]):
        found.append(Difference("program", f"python runs with `{_shown(src[-1].interpreter_options)}` in the source "
                                f"and `{_shown(dst[-1].interpreter_options)}` in the port",
                                (PYTHON_OPTIONS_NOTE, "not carried", *src[-1].interpreter_options)))
    if dst:
        found += _env_differences(src[-1], dst[-1])
        p_src, p_dst = _per_node(source), _per_node(port)
        if p_src and p_dst and not _same_model(source, port, p_src, p_dst):
            found.append(Difference("processes", (
                f"the source starts {p_src} processes per node of {source.allocation.gpus_per_node} devices, "
                f"the port {p_dst} of {port.allocation.gpus_per_node}"), ("process", "per node")))
        if p_src and p_dst and not _devices_kept(source, port, src[-1], dst[-1]):
            found.append(Difference("devices", f"the source's rank sees {_device_count(src[-1], source.allocation.gpus_per_node)} "
                                    f"of its node's {source.allocation.gpus_per_node} devices, the port's "
                                    f"{_device_count(dst[-1], port.allocation.gpus_per_node)} of "
                                    f"{port.allocation.gpus_per_node}", ("sees", "devices")))
    if dst and src[-1].cwd != dst[-1].cwd:
        found.append(Difference("cwd", f"rank 0 runs its program in {src[-1].cwd} in the source and in {dst[-1].cwd} "
                                "in the port", ("`cd ",)))
    for words in _setup_commands(source):
        if words not in _setup_commands(port):
            found.append(Difference("setup", f"the source runs `{_shown(words)}`; the port does not", (words[0],)))
    return [d for d in found if not d.named_in(header)]


def stops_itself(port: Trace) -> bool:
    """A port maple wrote to stop with its own message (a target with no environment for the program)."""
    return not port.ranks and port.exit_code != 0 and "maple-ci: " in port.stderr


def _setup_commands(trace: Trace) -> list:
    return [argv for argv in trace.not_run if argv and argv[0] in _SETUP]


def _not_traced(results: list, why: str) -> None:
    """The gate could not judge: each port says so (a warning, not a pass: nothing was compared)."""
    from ..verify.static import Check

    for result in results:
        result.checks.append(Check(name="trace", ok=False, severity="warning", message=f"not traced: {why}"))


# What an option of `maple port` changes on purpose (the user's word, not the port's doing): the gate
# does not hold those differences against the port.
ASKED = {"entrypoint": ("program", "processes", "devices", "cwd"), "script_args": ("program",),
         "framework": ("processes", "devices", "env"), "strategy": ("processes", "devices", "env"),
         "gpus_per_node": ("processes", "devices")}


def gate(source_path, results: list, trusted: bool = False, cluster: Optional[str] = None, asked=(),
         gpus: Optional[int] = None) -> list:
    """Each port of `results` that passed its static checks, traced against the source: a difference
    the header does not name fails it (a "trace" check, severity error, naming each difference).
    `cluster`, the source's own, gives its allocation's
    shape (devices and cores per node), or else `gpus`, the devices per node the source used where its
    directives do not say (a torchrun with --nproc_per_node=3 was on 3-GPU nodes); `asked`, the options
    the user gave (ASKED's keys)."""
    from pathlib import Path

    from ..skypilot import is_task
    from ..verify.static import Check
    from . import trace_with_ports

    text = Path(source_path).read_text(errors="replace")
    args = SAMPLE_ARGS if SUBMIT_ARGS.search(text) else ()
    todo = [result for result in results if result.status == "ok"]
    targets = [(None if is_task(r.script) else r.cluster, r.script) for r in todo]  # a SkyPilot task has no profile
    source, ports = trace_with_ports(Path(source_path), targets, cluster=cluster, trusted=trusted, args=args, gpus=gpus)
    if isinstance(source, MapleError):
        _not_traced(todo, f"the source could not be traced: {source}")
        return results
    if source.exit_code not in (0, None) and not source.ranks:
        _not_traced(todo, f"the source's trace ended (exit {source.exit_code}) before it started a program: "
                    + (source.stderr.strip().splitlines() or [""])[-1][:200])
        return results
    for result, port in zip(todo, ports):
        if isinstance(port, MapleError):
            _not_traced([result], f"the port could not be traced: {port}")
            continue
        wanted = {kind for option in asked for kind in ASKED.get(option, ())}
        found = [d for d in compare(source, port, header_of(result.script)) if d.kind not in wanted]
        ok = not found
        message = ("the port runs the source's program per rank as the source does (traced)" if ok else
                   "the trace of the port differs from the source's, and the header does not say so: "
                   + "; ".join(d.message for d in found))
        result.checks.append(Check(name="trace", ok=ok, severity="error", message=message))
        if not ok:
            result.status = "failed"
    return results
