"""Which command of a job is its program: each launch's score, and the choice among several.

A job runs several commands (a data step, then the training; a server, then a client). The program
to port is the one a launcher starts on the job's devices (srun, mpiexec or torchrun around python or
another program), else python or a framework's console script run alone, else none: set-up and the
shell's own tools are never the program. A console script counts as a framework's when the
framework's package declares it or its name carries the framework's (`vf-vllm`, frameworks.by_program),
or when the checkout itself declares it (setup.py's `console_scripts`, pyproject's [project.scripts]):
`stdbuf -o0 vf-vllm --model M` is the job's program.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

from ..launchers import DL_LAUNCHERS, MPI_LAUNCHERS
from .candidates import from_arguments
from .consoles import CONSOLES
from .frameworks import by_program, console_module, runtime_setup

if TYPE_CHECKING:
    from .launch import Launch
    from .walk import Shell

UTILITY = re.compile(r"hostname|\w+-smi|sycl-ls|clinfo|lscpu|nproc|echo|printf|mkdir|rm|cp|mv|ls|cat|env|printenv|"
                     r"true|false|sleep|date|df|du|free|uname|chmod|tar|rsync|touch|ln|pwd|which|ip|ifconfig|wait|"
                     r"kill|ulimit|sync|tee|grep|sed|awk|head|tail|sort|uniq|wc|cut|find|scontrol|squeue|sacct|"
                     r"module|ssh|pdsh|bash|sh|id|whoami|top|ps|python[\d.]*|pip\d?|conda|gpustat|dcgmi|strace")
# What the program's own name (file stem or last module part) says it does: it trains (`trainer`,
# `pretrain_gpt`, `finetune`), or it is a step before or after the training (fetching or preparing
# data, evaluating, reporting); a name that says neither ranks between them
_TRAINS = re.compile(r"(?i).*(?:train|finetun|fine_tun|fit\b|sft).*")
_STEP = re.compile(r"(?i).*(?:download|fetch|prepar|preprocess|tokeni[sz]|convert|shard|eval|test|infer|predict|"
                   r"report|plot|analy[sz]|upload|summar).*")


def score(stages: list, entry: Optional[str], args: list[str], shell: "Shell") -> int:
    """3: a launcher starts python or a framework's (or the checkout's own) console script; 2: a
    launcher starts another program; 1: one of the first kind alone; 0: not a program (a tool, set-up,
    a runtime)."""
    if not entry:
        return 0
    names = {name for name, _ in stages}
    parallel = bool(names & (MPI_LAUNCHERS | DL_LAUNCHERS))
    runs_python = bool(names & (DL_LAUNCHERS | {"python"})) or entry.endswith(".py")
    word = entry.rsplit("/", 1)[-1]
    # `srun fairseq-train`, `srun litgpt pretrain`: a program that is not one of the shell's tools
    runs_program = not UTILITY.fullmatch(word) and "$" not in entry
    runs_program = runs_program or from_arguments(entry)  # `srun -N 4 "$@"`: the job's arguments are its program
    # `llamafactory-cli train`, `fairseq-train`, the checkout's own `vf-vllm` alone: a program too
    trains = runs_python or word in CONSOLES or by_program(entry) is not None or (
        runs_program and console_module(word, shell) is not None)  # the checkout's files read for a program only
    # a framework's console script is a Python program too: `mpiexec ... vllm serve` (the engine) and then
    # `python client.py` on it score alike, and the client's name ranks it below the engine (best)
    found = 3 if parallel and trains else 2 if parallel and runs_program else 1 if trains else 0
    return 0 if runtime_setup(entry, args) else found  # `srun ray start --head`: the runtime, named as set-up


def best(launches: list["Launch"]) -> Optional["Launch"]:
    """The launch that most looks like the training job; among equals, one through a launcher that
    forks the workers (`prep.py && accelerate launch -m train`: the data step comes first), then the
    one whose name says it trains over one that says nothing, over a step before or after it
    (`-m pkg.preprocess` then `-m pkg.trainer`; `download.py` then `main.py`), else the first (`main.py`
    then `other.py`); None if none does."""
    found = max(launches, key=lambda launch: (launch.score, bool(launch.names() & DL_LAUNCHERS), _named(launch)),
                default=None)
    return found if found and found.score else None


def _named(launch: "Launch") -> int:
    """2 when the program's own name (file stem, or the last part of its -m module) says it trains, 0
    when it names a step before or after the training, else 1."""
    name = (launch.entry or "").removeprefix("-m ").rsplit("/", 1)[-1].removesuffix(".py").rsplit(".", 1)[-1]
    return 2 if _TRAINS.fullmatch(name) else 0 if _STEP.fullmatch(name) else 1
