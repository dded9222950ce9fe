"""Fujitsu Technical Computing Suite's job manager, PJM (RIKEN Fugaku, U-Tokyo Wisteria/BDEC-01 and
the other Fujitsu systems): `#PJM` directives with their `-L` resources (node=, elapse=, rscgrp=,
gpu=) and `--mpi` parameters (proc=, max-proc-per-node=), job variables, and pjsub/pjdel. A source
scheduler: scripts from these machines port out; no profiled cluster runs PJM.

Sources (read 2026-11-29):
- Fugaku user guide, "Job execution command options" (pjsub -L "resource=value[,...]", --mpi
  "parameter[,...]", -j, --name, -m/--mail-list; elapse=[[hour:]minute:]second, node=, rscgrp=):
  https://www.r-ccs.riken.jp/fugaku/docs/user-guide/sys-use/user-guide-use-1.49/build/ja/JobExecution/pjsubCommandOptions.html
- Wisteria/BDEC-01 job scripts as users write them (-g GROUP, -L rscgrp=regular-a, -L gpu=N on the
  share groups, --mpi proc=N, $PJM_O_NODEINF as mpirun's machine file): e.g.
  github.com/seieric/pytorch-mpi-singularity wisteria/sample_job.sh, github.com/mynlp/memorizationstudy
- The job variables (PJM_O_WORKDIR, PJM_JOBID, PJM_JOBNAME, PJM_BULKNUM, PJM_MPI_PROC, PJM_O_NODEINF)
  as those scripts read them # unconfirmed against the guide's own variable table
"""

from __future__ import annotations

import math
from typing import Optional

from ..launchers import Spec
from . import register
from .base import Directives, Option, Scheduler, as_written, positive, real
from .pbs import pbs_walltime

# pjsub's options: -L and --mpi carry resources and parameters (each read as an option of its own),
# the others are letters and words. -g is the group the job is charged to.
_NAMES = {"L": "L", "mpi": "mpi", "g": "account", "N": "job_name", "name": "job_name", "o": "output", "e": "error",
          "x": "env", "fs": "fs", "spath": "spath", "llio": "llio", "m": "mail", "mail-list": "mail_list",
          "gname": "gname", "step": "step", "sparam": "sparam", "bulk": "bulk", "j": "join", "S": "stats",
          "X": "export_all", "norestart": "norestart", "restart": "restart", "interact": "interact"}
_FLAGS = frozenset({"join", "stats", "export_all", "norestart", "restart", "interact", "bulk", "step"})
_MPI = "mpi_"  # --mpi proc=16 is the option mpi_proc
_NOT_PORTED = frozenset({"output", "error", "join", "stats", "mail", "mail_list", "spath", "llio", "fs", "norestart",
                         "restart", "step", "sparam", "bulk", "jobenv"})


def _walltime(value: str, d: Directives) -> str:
    return pbs_walltime(value)  # elapse=[[hour:]minute:]second, the form PBS writes


def _node_count(value: str) -> Optional[int]:
    """node=4, or Fugaku's shape node=2x3x4 (the product of its sides); None when neither."""
    sides = value.split(":")[0].split("x")
    return math.prod(int(side) for side in sides) if all(side.isdigit() and int(side) > 0 for side in sides) else None


def _nodes(value: str, d: Directives) -> int:
    d.nodes_given = True
    count = _node_count(value)
    if count is None:
        raise ValueError(f"expects a node count or shape (4, 2x3x4), got {value!r}")
    return count


class Pjm(Scheduler):
    name = "pjm"
    prefix = "#PJM"
    spec = Spec(aliases=_NAMES, flags=_FLAGS, value_default=True)
    submit = ("pjsub",)
    cancel = ("pjdel",)
    script_suffix = "pjm"
    var_prefix = "PJM_"
    job_vars = {
        "submit_dir": ("PJM_O_WORKDIR",),
        "job_id": ("PJM_JOBID",),
        "job_name": ("PJM_JOBNAME",),
        "array_index": ("PJM_BULKNUM",),
        "ranks": ("PJM_MPI_PROC",),
        "node_file": ("PJM_O_NODEINF",),
    }
    fixed_vars = {"PJM_MPI_PROC": "tasks"}  # --mpi proc=N
    job_environment = frozenset({"PJM_O_WORKDIR", "PJM_JOBID", "PJM_JOBNAME", "PJM_BULKNUM", "PJM_SUBJOBID",
                                 "PJM_MPI_PROC", "PJM_O_NODEINF"})
    site_queries = {
        "account": "your group's name (Wisteria: show_token, unconfirmed)",
        "queue": "pjstat --rsc",
        "max_walltime": "pjacl  (unconfirmed)",
    }
    limit_advice = "wait until your running jobs finish (pjstat) or delete one (pjdel <jobid>)"
    site_options = frozenset({"account", "rscgrp", "elapse"})
    gate_kept = frozenset({"job_name"})
    size_options = frozenset({"node", "elapse"})
    fix_options = dict.fromkeys(("account", "rscgrp", "elapse", "node", "gpu"), "word")
    export_option = "env"  # pjsub -x NAME=value
    not_ported = _NOT_PORTED
    fields = {"elapse": ("walltime", _walltime), "node": ("nodes", _nodes), "gpu": ("gpus_per_node", positive),
              f"{_MPI}proc": ("ntasks", positive), f"{_MPI}max_proc_per_node": ("ntasks_per_node", positive),
              "account": ("account", as_written), "rscgrp": ("queue", as_written)}
    example = ("#!/bin/bash\n#PJM -L node=2\n#PJM -L gpu=4\n#PJM -L elapse=1:30:00\n#PJM -g abc\n#PJM -L rscgrp=debug\n"
               "mpiexec python train.py\n")

    def walltime(self, value: str) -> Optional[str]:
        return pbs_walltime(value)

    def _letters(self) -> set:
        return set(self.spec.aliases.values()) - {"L", "mpi"}

    def parse_words(self, words: list[str], line: int) -> list[Option]:
        """pjsub's options, each -L resource and --mpi parameter (comma-separated) an option of its own."""
        found = []
        for option in super().parse_words(words, line):
            if option.name not in ("L", "mpi") or not option.value:
                found.append(option)
                continue
            prefix = _MPI if option.name == "mpi" else ""
            for item in option.value.split(","):
                key, equals, value = item.partition("=")
                found.append(Option(prefix + key.strip().replace("-", "_"), value if equals else None, line,
                                    (option.words[0], item)))
        return found

    def canonical(self, spelling: str) -> str:
        first, _, rest = spelling.strip().partition(" ")
        if first in ("-L", "--mpi") and rest:  # "-L elapse", "--mpi proc"
            return ("" if first == "-L" else _MPI) + rest.partition("=")[0].strip().replace("-", "_")
        return super().canonical(spelling)

    def knows(self, spelling: str) -> bool:
        first = spelling.strip().split(" ")[0]
        return first in ("-L", "--mpi") or first.lstrip("-") in self.spec.aliases and not first.startswith("---")

    def display(self, option: Option) -> str:
        if option.name in self._letters():
            return option.words[0]
        return f"--mpi {option.name[len(_MPI):]}" if option.name.startswith(_MPI) else f"-L {option.name}"

    def finish(self, last: dict[str, Option], d: Directives) -> None:
        d.account = real(d.account, "account", d)
        d.queue = real(d.queue, "queue", d)

    def format_option(self, name: str, value: Optional[str]) -> list[str]:
        if name in self._letters():
            letter = next(spelling for spelling, canonical in self.spec.aliases.items() if canonical == name)
            dashes = "-" if len(letter) == 1 else "--"
            return [f"{dashes}{letter}", value] if value else [f"{dashes}{letter}"]
        flag, key = ("--mpi", name[len(_MPI):]) if name.startswith(_MPI) else ("-L", name)
        key = key.replace("_", "-")
        return [flag, f"{key}={value}" if value else key]

    def with_value(self, option: Option, value: str) -> list[str]:
        if option.name not in self._letters():
            return self.format_option(option.name, value)
        return super().with_value(option, value)

    def capped(self, last: dict[str, Option], max_nodes: int, max_seconds: int) -> list[str]:
        return self.capped_size(last, "node", "elapse", max_nodes, max_seconds, count=_node_count)


PJM = register(Pjm())
