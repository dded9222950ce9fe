"""IBM Spectrum LSF with CSM (OLCF Summit, LLNL Sierra and Lassen): `#BSUB` directives, [hours:]minutes
walltimes, job variables, and bsub/bkill. A source scheduler: scripts from these machines port out.
No LSF machine is a target: Summit was decommissioned on 2024-11-15 (its guide says so), Sierra was shut
down in October 2025 (press reports, e.g. slashgear.com, read 2026-11-28), and for Lassen no LLNL page
on running PyTorch there, nor its current status, was found (# unconfirmed whether it still runs).

Sources (read 2026-11-28):
- OLCF Summit user guide, "Batch Scripts", "Common bsub Options" (-W [hours:]minutes, -nnodes with one
  hyphen, -P project, -J, -o/-e with %J, -w, -alloc_flags "gpumps smt1"), "LSF environment variables"
  (LSB_JOBID, LSB_JOBINDEX, LSB_HOSTS, LSB_QUEUE, LS_SUBCWD): https://docs.olcf.ornl.gov/systems/summit_user_guide.html
  (github.com/olcf/olcf-user-docs systems/summit_user_guide.rst; Summit was decommissioned on 2024-11-15).
- IBM LSF 10.1, "Environment variables set for job execution" (LSB_JOBNAME, LSB_DJOB_HOSTFILE,
  LSB_DJOB_NUMPROC): https://www.ibm.com/docs/en/spectrum-lsf/10.1.0?topic=variables-environment-set-job-execution
- LLNL's bank (-G) and queues (pbatch, pdebug): LLNL HPC-launcher's LSF output (github.com/LBANN/HPC-launcher,
  hpc_launcher/schedulers/lsf.py) # unconfirmed on an hpc.llnl.gov page
- jsrun's rank variables (JSM_NAMESPACE_RANK, _LOCAL_RANK, _SIZE): Lightning's LSFEnvironment,
  https://lightning.ai/docs/pytorch/stable/api/lightning.fabric.plugins.environments.LSFEnvironment.html
"""

from __future__ import annotations

import re
from typing import Optional

from ..launchers import Spec
from . import register
from .base import Directives, Option, Scheduler, as_written, per_node, positive, real, seconds_to_walltime

# bsub's options as LSF spells them: one hyphen, several letters (-nnodes, -alloc_flags), and the names
# this unit gives them. -G is LLNL's bank, -P OLCF's project: both are what the job is charged to.
_NAMES = {"nnodes": "nodes", "n": "slots", "W": "walltime", "P": "project", "G": "account", "q": "queue",
          "J": "job_name", "o": "output", "oo": "output", "e": "error", "eo": "error", "w": "dependency",
          "alloc_flags": "alloc_flags", "R": "resources", "gpu": "gpu", "cwd": "cwd", "u": "mail_user",
          "env": "env", "U": "reservation", "csm": "csm", "core_isolation": "core_isolation", "stage": "stage",
          "step_cgroup": "step_cgroup", "ln_slots": "ln_slots", "app": "app", "m": "hosts", "M": "memory_limit"}
_FLAGS = {"N": "mail_end", "B": "mail_begin", "XF": "x11", "Is": "interactive", "I": "interactive", "K": "wait",
          "x": "exclusive", "rn": "no_rerun", "r": "rerun", "shared-launch": "shared_launch"}
_PTILE = re.compile(r"span\[\s*ptile\s*=\s*(\d+)\s*\]")
# "span[hosts=1]: Indicates that all the processors allocated to this job must be on the same host"
# (IBM LSF 10.1, "Span string", https://www.ibm.com/docs/SSWRJV_10.1.0/lsf_admin/span_string.html, read 2026-11-29)
_ONE_HOST = re.compile(r"span\[\s*hosts\s*=\s*1\s*\]")
_GPU_NUM = re.compile(r"(?:^|:)num=(\d+)")
# What a job asks for that a port does not translate: output, dependency, node flags (SMT level, MPS,
# NVMe), mail, reservations and staging.
_NOT_PORTED = ("output", "error", "dependency", "alloc_flags", "mail_end", "mail_begin", "mail_user", "reservation",
               "stage", "csm", "core_isolation", "step_cgroup", "shared_launch")


def lsf_walltime(value: str) -> str:
    """bsub -W [hours:]minutes (a bare number is minutes) as HH:MM:SS."""
    match = re.fullmatch(r"(?:(\d+):)?(\d+)(?:/\S+)?", value.strip())  # -W 1:00/hostname: the host's clock
    if not match:
        raise ValueError(f"{value!r} is not an LSF run limit; write [hours:]minutes, e.g. 90 or 1:30")
    return seconds_to_walltime(int(match[1] or 0) * 3600 + int(match[2]) * 60)


def _walltime(value: str, d: Directives) -> str:
    return lsf_walltime(value)


def _nodes(value: str, d: Directives) -> int:
    d.nodes_given = True
    return positive(value, d)


def _ptile(value: str, d: Directives) -> Optional[int]:
    """Ranks per host of a classic LSF job: -R "span[ptile=4]"."""
    match = _PTILE.search(value)
    return int(match[1]) if match else None


def _gpus(value: str, d: Directives) -> Optional[int]:
    """GPUs per host: -gpu "num=4:mode=exclusive_process"; `num=1/task` is per task (bsub(1) -gpu: "By
    default, the number is per host. You can also specify that the number is per task by specifying
    /task", https://www.ibm.com/docs/en/spectrum-lsf/10.1.0?topic=o-gpu, read 2026-11-29)."""
    match = _GPU_NUM.search(value)
    if match and value[match.end():].startswith("/task"):
        d.gpus_per_task = int(match[1])
        return None
    return int(match[1]) if match else None


class Lsf(Scheduler):
    name = "lsf"
    prefix = "#BSUB"
    spec = Spec(aliases={**_NAMES, **_FLAGS}, flags=frozenset(_FLAGS.values()), value_default=True)
    submit = ("bsub",)  # CSM's bsub reads the file's #BSUB lines (Summit guide: "bsub myjob.lsf")
    # bsub(1): "bsub [options] command [arguments]" runs the command line as the job; a job script is
    # given on standard input (`bsub < job.sh`), whose #BSUB lines bsub then reads (IBM LSF 10.1, "bsub",
    # https://www.ibm.com/docs/en/spectrum-lsf/10.1.0?topic=reference-bsub, read 2026-11-29)
    runs_command = True
    cancel = ("bkill",)
    script_suffix = "lsf"
    var_prefix = "LSB_"
    job_vars = {
        "submit_dir": ("LS_SUBCWD",),
        "job_id": ("LSB_JOBID",),
        "job_name": ("LSB_JOBNAME",),
        "array_index": ("LSB_JOBINDEX",),
        "ranks": ("LSB_DJOB_NUMPROC",),  # slots: an mpirun of classic LSF starts one rank per slot
        "node_file": ("LSB_DJOB_HOSTFILE",),
        "rank": ("JSM_NAMESPACE_RANK",),
        "local_rank": ("JSM_NAMESPACE_LOCAL_RANK",),
    }
    launchers = frozenset({"jsrun", "lrun"})
    # Summit guide's LSF variables table and IBM's "Environment variables set for job execution" (read 2026-11-28)
    job_environment = frozenset({"LSB_JOBID", "LSB_JOBNAME", "LSB_JOBINDEX", "LSB_HOSTS", "LSB_QUEUE", "LSB_DJOB_HOSTFILE",
                                 "LSB_DJOB_NUMPROC", "LS_SUBCWD"})
    not_ported = frozenset(_NOT_PORTED)
    export_option = "env"  # bsub -env
    # bqueues -l prints a queue's RUNLIMIT and MEMLIMIT (IBM LSF 10.1 command reference, read
    # 2026-11-28); OLCF lists a user's projects with myOLCFProjects (unconfirmed here).
    site_queries = {
        "account": "your project's name (OLCF: myOLCFProjects, unconfirmed; other sites: their allocation page)",
        "queue": "bqueues",
        "max_walltime": "bqueues -l <queue>  (RUNLIMIT)",
        "mem": "bqueues -l <queue>  (MEMLIMIT), or a host's memory: lshosts",
    }
    limit_advice = "wait until your running jobs finish (bjobs) or kill one (bkill <jobid>); the queue's limits: bqueues -l <queue>"
    site_options = frozenset({"account", "project", "queue", "walltime", "reservation"})
    gate_kept = frozenset({"job_name", "alloc_flags"})
    size_options = frozenset({"nodes", "walltime"})
    # -o names the job's log, in the working directory only (lsf-%J.out): sites that refuse mail output ask for it
    fix_options = {**dict.fromkeys(("account", "project", "queue", "walltime", "memory_limit", "nodes", "slots", "gpu"),
                                   "word"), "output": "log_name"}
    fields = {"nodes": ("nodes", _nodes), "slots": ("ntasks", positive), "walltime": ("walltime", _walltime),
              "account": ("account", as_written), "queue": ("queue", as_written), "resources": ("ntasks_per_node", _ptile),
              "gpu": ("gpus_per_node", _gpus)}
    example = ("#!/bin/bash\n#BSUB -nnodes 2\n#BSUB -gpu \"num=4\"\n#BSUB -W 1:30\n#BSUB -G abc\n#BSUB -q debug\n"
               "jsrun -n 8 -a 1 -g 1 python train.py\n")

    def walltime(self, value: str) -> Optional[str]:
        return lsf_walltime(value)

    def write_walltime(self, walltime: str) -> str:
        hours, minutes, seconds = (int(part) for part in walltime.split(":"))
        minutes += 1 if seconds else 0  # LSF counts whole minutes: round up, never cut the job short
        return f"{hours + minutes // 60}:{minutes % 60:02d}"

    def _letters(self) -> dict:
        """name -> bsub's spelling (the first where two spell one: -o before -oo)."""
        letters: dict = {}
        for letter, name in self.spec.aliases.items():
            letters.setdefault(name, letter)
        return letters

    def _value(self, name: str, value: str) -> str:
        """A walltime given as HH:MM:SS (a fix, the gate) written as bsub -W reads one."""
        return self.write_walltime(value) if name == "walltime" and value.count(":") == 2 else value

    def display(self, option: Option) -> str:
        return f"-{self._letters().get(option.name, option.name)}"

    def _name(self, token: str) -> tuple[str, Optional[str]]:
        """bsub's options are one hyphen and whole words (-nnodes, -alloc_flags); -W02:00 and -Pabc attach."""
        body = token.lstrip("-")
        if body in self.spec.aliases:
            return self.spec.aliases[body], None
        if len(body) > 1 and body[0] in self.spec.aliases:
            return self.spec.aliases[body[0]], body[1:]
        return body, None

    def finish(self, last: dict[str, Option], d: Directives) -> None:
        project = last.get("project")
        if d.account is None and project is not None:  # OLCF charges -P, LLNL -G
            d.set("account", project.value, project.line)
        resources = last.get("resources")
        if d.nodes is None and d.ntasks and resources and _ONE_HOST.search(resources.value or ""):
            d.ntasks_per_node = d.ntasks  # -n 8 -R "span[hosts=1]": the 8 slots on one host
        if d.nodes is None and d.ntasks and d.ntasks_per_node:  # classic LSF: -n 8 -R "span[ptile=4]"
            d.nodes_given = True
            d.set("nodes", per_node(d.ntasks, d.ntasks_per_node), d.lines["ntasks"])
        d.spreads = not d.nodes_given and bool(d.ntasks)
        if d.gpus_per_node is None and d.gpus_per_task and d.ntasks_per_node:  # num=1/task with span[ptile=4]
            d.gpus_per_node = d.gpus_per_task * d.ntasks_per_node
        d.account = real(d.account, "account", d)
        d.queue = real(d.queue, "queue", d)

    def format_option(self, name: str, value: Optional[str]) -> list[str]:
        letter = f"-{self._letters().get(name, name)}"
        return [letter, self._value(name, value)] if value else [letter]

    def with_value(self, option: Option, value: str) -> list[str]:
        return super().with_value(option, self._value(option.name, value))

    def knows(self, spelling: str) -> bool:
        return not spelling.startswith("--") and spelling.lstrip("-") in self.spec.aliases

    def capped(self, last: dict[str, Option], max_nodes: int, max_seconds: int) -> list[str]:
        return self.capped_size(last, "nodes", "walltime", max_nodes, max_seconds)


LSF = register(Lsf())
