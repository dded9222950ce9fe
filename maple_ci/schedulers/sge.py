"""Grid Engine (Son of Grid Engine, Univa/Altair Grid Engine; AIST ABCI 2.0, Edinburgh's Eddie): `#$`
directives with their `-l` resources (h_rt=, the site's resource types), job variables, and qsub/qdel.
A source scheduler: scripts from these machines port out; no profiled cluster runs Grid Engine.
Its `-l name=value[,name=value]` list is PBS's form, so the reading and writing of `-l` is PBS's unit's.

Sources (read 2026-11-29):
- Grid Engine's qsub(1) (options -l, -q, -P, -N, -pe, -cwd, -V, -j, -o, -e, -t; h_rt as
  [[hours:]minutes:]seconds) and its job environment (JOB_ID, JOB_NAME, SGE_O_WORKDIR, SGE_TASK_ID,
  NSLOTS, NHOSTS, PE_HOSTFILE): https://gridscheduler.sourceforge.net/htmlman/htmlman1/qsub.html
- ABCI 2.0 User Guide, "Job Execution" (`#$ -l rt_F=N`: N nodes of resource type F, the full node;
  `-g group` at qsub is the group charged): https://docs.abci.ai/v2/en/job-execution/  # unconfirmed (archived)
- Grid Engine's complex(5): a BOOL attribute takes TRUE/FALSE (or 1/0), case-insensitive:
  https://gridscheduler.sourceforge.net/htmlman/htmlman5/complex.html
- Grid Engine's sge_types(5), time_specifier: seconds, or "3 decimal integer numbers separated by colon
  signs" (hours, minutes, seconds), a zero field may be left empty (1::1); no days field. Its parser
  (source/libs/uti/sge_parse_num_par.c, sge_parse_num_val) takes exactly those forms: `1:30` and
  `0:1:00:00` are refused there. https://github.com/son-of-gridengine/sge doc/man/man5/sge_types.5
"""

from __future__ import annotations

import re
from typing import Optional

from ..launchers import Spec
from . import register
from .base import Directives, Option, as_written, gpu_count, positive, real, seconds_to_walltime
from .pbs import Pbs

# Resource types that are whole nodes, with the GPUs of that node: `-l NAME=N` asks for N such nodes.
# ABCI 2.0 (https://docs.abci.ai/v2/en/job-execution/, "Job Execution Resource"; unconfirmed, archived):
# rt_F a V100 node of 4, rt_AF an A100 node of 8. TSUBAME 3.0 f_node (4 P100) and TSUBAME 4.0 node_f
# (4 H100): the centres' user guides (https://www.t3.gsic.titech.ac.jp, https://www.t4.gsic.titech.ac.jp;
# unconfirmed, not read today).
FULL_NODES = {"rt_F": 4, "rt_AF": 8, "f_node": 4, "node_f": 4}

# qsub's options this unit names; the multi-letter ones are listed so that -cwd is not -c with "wd".
_NAMES = {"q": "queue", "P": "account", "g": "account", "N": "job_name", "l": "l", "o": "output", "e": "error",
          "j": "join", "t": "array", "pe": "pe", "cwd": "cwd", "wd": "wd", "V": "export_all", "v": "env",
          "m": "mail", "M": "mail_list", "S": "shell", "hold_jid": "hold_jid", "now": "now", "notify": "notify",
          "b": "binary", "R": "reserve", "A": "accounting", "ar": "reservation"}
_FLAGS = frozenset({"cwd", "export_all", "notify"})
_NOT_PORTED = frozenset({"output", "error", "join", "array", "mail", "mail_list", "hold_jid", "cwd", "wd", "shell",
                         "binary", "reserve", "now", "notify"})


def sge_gpus(value: str, d: Directives) -> int:
    """`-l gpu=N`, or a site's BOOL `gpu` resource: complex(5) reads TRUE/true (or 1) as requested,
    one of it (UCL's `-l gpu=true`)."""
    if value.lower() == "true":
        d.notes.append("-l gpu=true (a Grid Engine BOOL resource) read as one GPU (unconfirmed for the site)")
        return 1
    return gpu_count(value, d)


def full_nodes(value: str, d: Directives) -> int:
    """`-l f_node=2`: two whole nodes, a node count as fixed as Slurm's -N (the job holds them, whatever runs)."""
    d.nodes_given = True
    return positive(value, d)


def sge_time(value: str, d: Directives) -> str:
    """A time_specifier (sge_types(5)) as HH:MM:SS: seconds, or hours:minutes:seconds with empty
    fields 0. Four fields are read as days first, with a note: Grid Engine documents no days field,
    but scripts for TSUBAME 4.0's Altair Grid Engine write `0:1:00:00` for an hour (unconfirmed)."""
    fields = value.strip().split(":")
    if not all(re.fullmatch(r"\d*", f) for f in fields) or len(fields) not in (1, 3, 4) or not any(fields):
        raise ValueError(f"{value!r} is not a Grid Engine time (sge_types(5): seconds or hours:minutes:seconds)")
    seconds = 0
    for number, unit in zip(reversed(fields), (1, 60, 3600, 86400)):
        seconds += int(number or 0) * unit
    walltime = seconds_to_walltime(seconds)
    if len(fields) == 4:
        d.notes.append(f"h_rt {value!r} read as days:hours:minutes:seconds ({walltime}); Grid Engine's "
                       "sge_types(5) documents hours:minutes:seconds only: check the walltime")
    return walltime


class Sge(Pbs):
    name = "sge"
    prefix = "#$"
    spec = Spec(aliases=_NAMES, flags=_FLAGS, value_default=True)
    submit = ("qsub",)  # PBS's too: a bare qsub line is read as PBS's (registered first)
    cancel = ("qdel",)
    script_suffix = "sge"
    var_prefix = "SGE_"
    # qsub(1), ENVIRONMENTAL VARIABLES (above): the job's id and name, its hosts and slots, and the
    # parallel environment's host file, one line a host: "host slots queue processor-range"
    job_vars = {
        "submit_dir": ("SGE_O_WORKDIR",),
        "array_index": ("SGE_TASK_ID",),
        "job_id": ("JOB_ID",),
        "job_name": ("JOB_NAME",),
        "nodes": ("NHOSTS",),
        "ranks": ("NSLOTS",),
        "node_file": ("PE_HOSTFILE",),
    }
    job_environment = frozenset({"SGE_O_WORKDIR", "SGE_TASK_ID", "SGE_O_HOST", "SGE_STDOUT_PATH", "SGE_CWD_PATH"})
    error_patterns = (r"^Unable to run job: ",)
    site_queries = {
        "account": "your group's name (ABCI: the -g group; others: -P project, unconfirmed)",
        "queue": "qconf -sql",
        "max_walltime": "qconf -sq <queue>  (h_rt)",
    }
    limit_advice = "wait until your running jobs finish (qstat -u $USER) or delete one (qdel <jobid>)"
    helper_vars = frozenset()
    site_options = frozenset({"account", "queue", "h_rt"})
    gate_kept = frozenset({"job_name"})
    size_options = frozenset({*FULL_NODES, "h_rt"})
    fix_options = dict.fromkeys(("account", "queue", "h_rt", *FULL_NODES), "word")
    export_option = "env"
    not_ported = _NOT_PORTED
    # -l gpu=N: the GPU consumable as sites name it, per host of a one-slot-per-host job  # unconfirmed
    fields = {"h_rt": ("walltime", lambda value, d: sge_time(value, d)), **dict.fromkeys(FULL_NODES, ("nodes", full_nodes)),
              "gpu": ("gpus_per_node", sge_gpus),
              # Notre Dame CRC's `-l gpu_card=N`, GPUs of the job's one host (docs.crc.nd.edu; unconfirmed, not read today)
              "gpu_card": ("gpus_per_node", gpu_count),
              "account": ("account", as_written), "queue": ("queue", as_written)}
    example = ("#!/bin/bash\n#$ -l rt_F=2\n#$ -l gpu=4\n#$ -l h_rt=1:30:00\n#$ -P abc\n#$ -q debug\n#$ -cwd\n"
               "mpiexec python train.py\n")

    def walltime(self, value: str) -> Optional[str]:
        return sge_time(value, Directives())

    def node_file(self, nodes: list, slots: int) -> str:
        return "".join(f"{node} {slots} all.q@{node} UNDEFINED\n" for node in nodes)

    def _letters(self) -> set:
        return set(self.spec.aliases.values()) - {"l"}

    def finish(self, last: dict[str, Option], d: Directives) -> None:
        node_type = next((name for name in FULL_NODES if name in last), None)
        if node_type and d.gpus_per_node is None:
            d.set("gpus_per_node", FULL_NODES[node_type], last[node_type].line)
        d.account = real(d.account, "account", d)
        d.queue = real(d.queue, "queue", d)

    def on_nodes(self, d: Directives, cpus_per_node: int, gpus_per_node: Optional[int]) -> Directives:
        return d

    def format_option(self, name: str, value: Optional[str]) -> list[str]:
        spelling = next((c for c, n in self.spec.aliases.items() if n == name and c != "g"), None)
        if spelling is None or spelling == "l":
            return ["-l", f"{name}={value}" if value else name]
        return [f"-{spelling}", value] if value else [f"-{spelling}"]

    def capped(self, last: dict[str, Option], max_nodes: int, max_seconds: int) -> list[str]:
        node_type = next((name for name in FULL_NODES if name in last), "rt_F")
        return self.capped_size(last, node_type, "h_rt", max_nodes, max_seconds)


SGE = register(Sge())
