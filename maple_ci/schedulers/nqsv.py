"""NEC NQSV (the scheduler of NEC's SX-Aurora and GPU systems: CCS Tsukuba's Pegasus, Tohoku's
AOBA): `#PBS` lines, as PBS writes them, with NQSV's own options: `-b N` logical hosts (the nodes),
`--cpunum-lhost`/`--gpunum-lhost`/`--memsz-lhost` per logical host, `-T` the MPI job type, `-l
elapstim_req=` the elapsed-time limit, `--venode` the vector engines. A source scheduler: no profiled
cluster runs NQSV. Its block is NQSV's, not PBS Pro's, only where one of those options is in it: PBS
Pro reads `-b` and `-T` otherwise or not at all.

Sources (read 2026-11-29; NEC's NQSV User's Guide is not public: unconfirmed against it):
- Job scripts of CCS Tsukuba's Pegasus as users publish them (`#PBS -b 2`, `#PBS --cpunum-lhost=48`,
  `#PBS --gpunum-lhost=1` "per logical host", `#PBS -l elapstim_req=01:00:00`, `#PBS -T openmpi`,
  `#PBS -v NQSV_MPI_VER=...`, mpirun with $NQSII_MPIOPTS): find_string "gpunum-lhost", and an Open
  OnDemand adapter that reads -b as the node count and --gpunum-lhost per host (same search)
- PBS Pro's qsub (pbs.py's sources): no -b option and -T not a job type
"""

from __future__ import annotations

import re
from typing import Optional

from ..launchers import Spec
from . import register
from .base import Directives, Option, as_written, gpu_count, positive, real
from .pbs import Pbs, pbs_walltime

# NQSV's own options, by the names this unit gives them; with PBS's letters (-A, -q, -N, -o, -e, -j, -v, -l).
_OWN = {"b": "hosts", "T": "job_type", "venode": "venode", "cpunum-lhost": "cpunum_lhost",
        "gpunum-lhost": "gpunum_lhost", "memsz-lhost": "memsz_lhost", "group": "group"}
# What only an NQSV block holds: the per-host options, the elapsed-time resource, an MPI job type.
_ITS_OWN = re.compile(r"(?:^|\s)(?:--(?:venode|cpunum-lhost|gpunum-lhost|memsz-lhost)\b|-l\s*elapstim_req=|"
                      r"-T\s+(?:intmpi|openmpi|mvapich|necmpi|distrib)\b)")


def _walltime(value: str, d: Directives) -> str:
    return pbs_walltime(value)


class Nqsv(Pbs):
    name = "nqsv"
    dialect_of = "pbs"
    spec = Spec(aliases={**Pbs.spec.aliases, **_OWN}, values=Pbs.spec.values | frozenset(_OWN.values()),
                value_default=False)
    script_suffix = "nqsv"
    var_prefix = "NQSII_"
    job_vars = {}  # NQSV's own job variables are not documented publicly; scripts read only $NQSII_MPIOPTS
    fixed_vars = {}
    helper_vars = frozenset()
    # $NQSII_MPIOPTS (the mpirun options NQSV gives a -T job) is not declared: its value is not public, and as an
    # unknown job variable it would hide the launch's own -np/-npernode from the reader
    job_environment = frozenset()
    site_queries = {"account": "your group's name (-A)", "queue": "qstat -Q (unconfirmed for NQSV)",
                    "max_walltime": "the queue's elapstim limit in the site's guide"}
    site_options = frozenset({"account", "queue", "elapstim_req"})
    gate_kept = frozenset({"job_type"})
    size_options = frozenset({"hosts", "elapstim_req"})
    fix_options = dict.fromkeys(("account", "queue", "elapstim_req", "hosts", "gpunum_lhost"), "word")
    # NQSV's per-host CPUs and memory, the MPI job type, the vector engines: no target option says the same
    not_ported = Pbs.not_ported | frozenset({"job_type", "cpunum_lhost", "memsz_lhost", "venode", "group"})
    fields = {"elapstim_req": ("walltime", _walltime), "hosts": ("nodes", positive),
              "gpunum_lhost": ("gpus_per_node", gpu_count), "account": ("account", as_written),
              "queue": ("queue", as_written)}
    example = ("#!/bin/bash\n#PBS -b 2\n#PBS --gpunum-lhost=4\n#PBS -l elapstim_req=1:30:00\n#PBS -A abc\n#PBS -q debug\n"
               "#PBS -T openmpi\nmpirun ${NQSII_MPIOPTS} python train.py\n")

    def block(self, text: str) -> list[tuple[int, str]]:
        found = super().block(text)
        return found if any(_ITS_OWN.search(rest) for _, rest in found) else []

    def finish(self, last: dict[str, Option], d: Directives) -> None:
        d.account = real(d.account, "account", d)
        d.queue = real(d.queue, "queue", d)

    def on_nodes(self, d: Directives, cpus_per_node: int, gpus_per_node: Optional[int]) -> Directives:
        return d

    def display(self, option: Option) -> str:
        first = option.words[0]
        return first.split("=")[0] if first.startswith("--") else super().display(option)

    def format_option(self, name: str, value: Optional[str]) -> list[str]:
        spelling = next((c for c, n in _OWN.items() if n == name), None)
        if spelling and len(spelling) > 1:
            return [f"--{spelling}={value}" if value else f"--{spelling}"]
        return super().format_option(name, value)

    def capped(self, last: dict[str, Option], max_nodes: int, max_seconds: int) -> list[str]:
        return self.capped_size(last, "hosts", "elapstim_req", max_nodes, max_seconds)


NQSV = register(Nqsv())
