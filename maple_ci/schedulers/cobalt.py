"""Cobalt (ALCF's scheduler before PBS Pro: Theta, ThetaGPU, Cooley, Mira): `#COBALT` directives with
qsub's own options (-n nodes, -t minutes or HH:MM:SS, -q, -A, --attrs, -O), job variables, and
qsub/qdel. A source scheduler: scripts from these retired machines port out; no profiled cluster runs
Cobalt. Its qsub is not PBS's: `-n` is the node count and `-t 720` is 720 minutes.

Sources (read 2026-11-29):
- ALCF, "Cobalt Job Control on BG/Q": -A project, -q queue, -t time ("-t 5 for 5 minutes, -t 01:10:20
  for 1 hr 10 min 20 sec"), -n number of nodes, --mode, --proccount, -O name of the job and its
  stdout/stderr, -i stdin, --env VAR1=1:VAR2=2: https://www.alcf.anl.gov/user-guides/bgq-cobalt-job-control
- ALCF, "Running Jobs on XC40": `#COBALT -t 30`, `#COBALT -n 128`, `#COBALT --attrs ...`, `#COBALT -A
  Catalyst` in a script job, whose size it reads from $COBALT_JOBSIZE:
  https://www.alcf.anl.gov/user-guides/running-jobs-xc40
- ThetaGPU (full-node and single-gpu queues, mpirun on the job's nodes):
  https://docs.alcf.anl.gov/theta-gpu/queueing-and-running-jobs/job-and-queue-scheduling/
- $COBALT_JOBID and $COBALT_NODEFILE (one host a line) as ThetaGPU job scripts read them  # unconfirmed
  against ALCF's own variable list
"""

from __future__ import annotations

import re
from typing import Optional

from ..launchers import Spec
from . import register
from .base import Directives, Option, Scheduler, as_written, positive, real, seconds_to_walltime

_NAMES = {"n": "nodes", "nodecount": "nodes", "t": "time", "walltime": "time", "q": "queue", "queue": "queue",
          "A": "project", "project": "project", "O": "outputprefix", "outputprefix": "outputprefix",
          "o": "output", "e": "error", "i": "input", "M": "notify", "notify": "notify", "attrs": "attrs",
          "env": "env", "mode": "mode", "proccount": "proccount", "c": "proccount", "jobname": "jobname",
          "dependencies": "dependencies", "I": "interactive", "interactive": "interactive", "debuglog": "debuglog"}
_FLAGS = frozenset({"interactive"})
_NOT_PORTED = frozenset({"outputprefix", "output", "error", "input", "notify", "dependencies", "debuglog", "mode",
                         "attrs", "interactive"})


def cobalt_time(value: str) -> str:
    """-t as HH:MM:SS: a bare number is minutes, else hours:minutes:seconds (the BG/Q page's two forms)."""
    value = value.strip()
    if re.fullmatch(r"\d+", value):
        return seconds_to_walltime(int(value) * 60)
    parts = value.split(":")
    if len(parts) != 3 or not all(re.fullmatch(r"\d+", part) for part in parts):
        raise ValueError(f"{value!r} is not a Cobalt time (minutes, or HH:MM:SS)")
    hours, minutes, seconds = (int(part) for part in parts)
    return seconds_to_walltime(hours * 3600 + minutes * 60 + seconds)


class Cobalt(Scheduler):
    name = "cobalt"
    prefix = "#COBALT"
    spec = Spec(aliases=_NAMES, flags=_FLAGS, value_default=True)
    submit = ("qsub",)  # PBS's too: a bare qsub line is read as PBS's (schedulers/__init__.py orders the units)
    cancel = ("qdel",)
    script_suffix = "cobalt"
    var_prefix = "COBALT_"
    job_vars = {
        "job_id": ("COBALT_JOBID",),
        "nodes": ("COBALT_JOBSIZE",),
        "node_file": ("COBALT_NODEFILE",),
    }
    fixed_vars = {"COBALT_JOBSIZE": "nodes"}
    job_environment = frozenset({"COBALT_JOBID", "COBALT_JOBSIZE", "COBALT_NODEFILE", "COBALT_PARTNAME"})
    error_patterns = (r"^qsub: ",)  # unconfirmed: Cobalt's qsub prefixes its errors with its name as PBS's does
    site_queries = {
        "account": "your ALCF project's name (-A)",
        "queue": "the machine's queue list in ALCF's user guide",
        "max_walltime": "the queue's limit in ALCF's user guide",
    }
    limit_advice = "wait until your running jobs finish (qstat -u $USER) or delete one (qdel <jobid>)"
    site_options = frozenset({"project", "queue", "attrs"})
    gate_kept = frozenset({"jobname"})
    size_options = frozenset({"nodes", "time"})
    fix_options = dict.fromkeys(("project", "queue", "time", "nodes"), "word")
    export_option = "env"
    not_ported = _NOT_PORTED
    fields = {"time": ("walltime", lambda value, d: cobalt_time(value)), "nodes": ("nodes", positive),
              "project": ("account", as_written), "queue": ("queue", as_written), "proccount": ("ntasks", positive)}
    example = "#!/bin/bash\n#COBALT -n 2\n#COBALT -t 90\n#COBALT -A abc\n#COBALT -q debug\nmpirun python train.py\n"

    def walltime(self, value: str) -> Optional[str]:
        return cobalt_time(value)

    def finish(self, last: dict[str, Option], d: Directives) -> None:
        d.account = real(d.account, "account", d)
        d.queue = real(d.queue, "queue", d)

    def knows(self, spelling: str) -> bool:
        token = spelling.strip()
        return " " not in token and token.lstrip("-") in self.spec.aliases and (len(token) == 2 or token.startswith("--"))

    def format_option(self, name: str, value: Optional[str]) -> list[str]:
        spelling = next(c for c, n in self.spec.aliases.items() if n == name) if name in self.spec.aliases.values() else name
        flag = f"-{spelling}" if len(spelling) == 1 else f"--{spelling}"
        return [flag, value] if value else [flag]

    def capped(self, last: dict[str, Option], max_nodes: int, max_seconds: int) -> list[str]:
        return self.capped_size(last, "nodes", "time", max_nodes, max_seconds)


COBALT = register(Cobalt())
