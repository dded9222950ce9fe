"""Extraction of an untrusted script in a child process under CPU, memory and wall-clock limits.

The step and byte budgets (budget.py) stop every pathological form known; these limits are for
the ones not yet known. The bot reads scripts from forks and comments, and an OOM kill or a hung
runner would leave no reply and nothing cleaned up: here any exhaustion is a MapleError naming
the limit, and the bot's process is never the one that runs out.

A fresh interpreter (`python -m maple_ci.extract.isolated`), not a fork: the bot has threads
(check runs, verifications) whose locks a forked child could inherit held; and not
multiprocessing's 'spawn', which re-runs the caller's main script. The child sets its own limits
before it reads anything, and answers with the pickled JobIntent or the error on stdout.
"""

from __future__ import annotations

import os
import pickle
import resource
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import MapleError


@dataclass(frozen=True)
class Limits:
    """Issue 15's bound: any input up to the size cap is read in <= 5 s and <= 512 MiB."""

    memory_mb: int = 512  # address space of the child, interpreter included (~25 MiB)
    cpu_s: int = 5
    wall_s: float = 20.0  # CPU time plus starting an interpreter on a busy runner


def _child() -> None:
    text, name, base_dir, limits = pickle.load(sys.stdin.buffer)
    memory = limits.memory_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    # SIGXCPU at the soft limit; the kernel's SIGKILL one second later if it is caught or ignored
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
    from . import extract

    try:
        answer = ("ok", extract(text, name, base_dir=base_dir))
    except MemoryError:
        answer = ("memory", None)
    except MapleError as error:
        answer = ("error", (str(error), error.exit_code))
    pickle.dump(answer, sys.stdout.buffer)


def extract_isolated(text: str, name: str, base_dir: Optional[Path] = None, limits: Limits = Limits()):
    """extract(text, name, base_dir=base_dir), run in a child process within `limits`."""
    # the child finds this maple_ci, and nothing of the bot's environment (its token) but PATH
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    request = pickle.dumps((text, name, None if base_dir is None else str(base_dir), limits))
    try:
        done = subprocess.run([sys.executable, "-m", __name__], input=request, capture_output=True, env=env,
                              timeout=limits.wall_s, check=False)
    except subprocess.TimeoutExpired:  # run() has killed the child
        kind, value, status = "wall", None, None
    else:
        status = done.returncode
        kind, value = pickle.loads(done.stdout) if status == 0 else ("died", None)
    if kind == "ok":
        return value
    if kind == "error":
        raise MapleError(*value)
    raise MapleError(f"{name}: {_exhausted(kind, status, limits)}; extraction stopped and nothing was "
                     "ported. A launch script reads in well under these limits: give the script that launches "
                     "the training", exit_code=2)


def _exhausted(kind: str, status: Optional[int], limits: Limits) -> str:
    """Which limit the child ran into, as far as its end tells."""
    if kind == "memory":
        return f"reading the script needs more than {limits.memory_mb} MiB of memory"
    if kind == "wall":
        return f"reading the script took longer than {limits.wall_s:g} s"
    if status in (-signal.SIGXCPU, -signal.SIGKILL):
        return f"reading the script needs more than {limits.cpu_s} s of CPU time"
    return (f"the reader stopped (exit status {status}) within its limits of {limits.memory_mb} MiB "
            f"and {limits.cpu_s} s of CPU time")


if __name__ == "__main__":
    _child()
