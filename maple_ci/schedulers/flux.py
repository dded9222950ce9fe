"""Flux (LLNL El Capitan, Tuolumne): `#flux:` submission directives (flux batch's options), its
walltime forms (minutes or Flux standard duration), job variables, and flux batch / flux cancel.

Sources (read 2026-11-28):
- flux-batch(1), "SUBMISSION DIRECTIVES" and "JOB PARAMETERS":
  https://flux-framework.readthedocs.io/projects/flux-core/en/latest/man1/flux-batch.html
  (github.com/flux-framework/flux-core doc/man1/flux-batch.rst, common/job-param-batch.rst,
  job-param-common.rst, job-param-additional.rst, job-other-options.rst)
- the job environment: doc/man1/common/job-environment-variables.rst (FLUX_JOB_ID, FLUX_JOB_SIZE,
  FLUX_JOB_NNODES, FLUX_TASK_RANK, FLUX_TASK_LOCAL_ID)
- LLNL's bank option (-B/--bank): https://github.com/LLNL/HPC-Tutorials/blob/main/flux/section4.md
  ("adding --bank=BANK to your flux run|submit|alloc|batch command")
The option grammar is flux run's (launchers/grammars.yaml, row `flux`): flux batch takes the same job
options, with slots where run has tasks (-n --nslots, -c --cores-per-slot, -g --gpus-per-slot).
"""

from __future__ import annotations

import math
import re
from typing import Optional

from ..launchers import grammar
from . import register
from .base import Directives, Option, Scheduler, as_written, gpu_count, per_node, positive, real, seconds_to_walltime

# RFC 36: a sentinel is a prefix of non-alphanumeric characters and the tag flux: or FLUX:
# ("#flux:", "# flux:", "#FLUX:"); every directive of a file uses the same one.
_SENTINEL = re.compile(r"(#[^A-Za-z0-9\s]*\s*)(flux|FLUX):")
# Flux standard duration (RFC 23): a number with an optional unit; a bare number is minutes.
_FSD = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)")
_UNIT = {"": 60, "s": 1, "m": 60, "h": 3600, "d": 86400}
_CLOCK = re.compile(r"\d{1,4}:\d{2}:\d{2}")
# batch's own long spellings for the names the run grammar gives (-n is --nslots in a batch job)
_LONG = {"ntasks": "nslots", "cores_per_task": "cores-per-slot", "gpus_per_task": "gpus-per-slot",
         "ppn": "tasks-per-node"}
# What a job asks for that a port does not translate: output names, dependencies, signals, shell
# options and jobspec attributes (LLNL's gpumode=TPX, thp=always), its environment and directory.
_NOT_PORTED = ("output", "error", "dependency", "begin_time", "signal", "urgency", "setattr", "setopt", "env",
               "env_remove", "env_file", "cwd", "conf", "add_file", "flags")


def flux_walltime(value: str) -> Optional[str]:
    """flux batch -t (minutes, or FSD like 90s, 30m, 2h, 1.5d) as HH:MM:SS; None if unlimited (0, inf)."""
    value = value.strip()
    if value in ("0", "inf", "infinity"):
        return None
    match = _FSD.fullmatch(value)
    if not match:
        raise ValueError(f"{value!r} is not a Flux time limit; write minutes or a duration such as 90m or 2h")
    return seconds_to_walltime(math.ceil(float(match[1]) * _UNIT[match[2]]))


def fsd(walltime: str) -> str:
    """HH:MM:SS as Flux writes a duration: whole minutes as 90m, else seconds."""
    hours, minutes, seconds = (int(part) for part in walltime.split(":"))
    total = hours * 3600 + minutes * 60 + seconds
    return f"{total // 60}m" if total % 60 == 0 else f"{total}s"


def _nodes(value: str, d: Directives) -> int:
    d.nodes_given = True
    return positive(value, d)


def _time(value: str, d: Directives) -> Optional[str]:
    return flux_walltime(value)


class Flux(Scheduler):
    name = "flux"
    prefix = "#flux:"
    spec = grammar("flux")
    submit = ("flux", "batch")
    cancel = ("flux", "cancel")
    script_suffix = "flux"
    var_prefix = "FLUX_"
    # Set in each task that flux run starts (job-environment-variables.rst); there is no submit-dir
    # or node-list variable: `flux hostlist local` prints the job's nodes.
    job_vars = {
        "job_id": ("FLUX_JOB_ID",),
        "nodes": ("FLUX_JOB_NNODES",),
        "ranks": ("FLUX_JOB_SIZE",),
        "rank": ("FLUX_TASK_RANK",),
        "local_rank": ("FLUX_TASK_LOCAL_ID",),
    }
    fixed_vars = {"FLUX_JOB_NNODES": "nodes"}
    site_options = frozenset({"bank", "queue", "requires", "time_limit"})
    gate_kept = frozenset({"ntasks", "ppn", "cores_per_task", "gpus_per_task", "gpus_per_node", "exclusive",
                           "job_name"})
    size_options = frozenset({"nodes", "time_limit"})
    fix_options = dict.fromkeys(("nodes", "ntasks", "ppn", "cores_per_task", "gpus_per_task", "gpus_per_node",
                                 "exclusive", "time_limit", "queue", "bank"), "word")
    # Lines of a failed job as flux-core prints them (flux-core#6437, flux-sched#1084, flux-core#6054, flux-docs#287):
    # a fatal job exception (severity 0), flux run's summary of failed tasks, a command's own error.
    error_patterns = (r"job\.exception\b[^\n]*\bseverity=0\b", r"flux-job: task\(s\) exited with exit code [1-9]",
                      r"\bflux-(?:batch|run|submit|alloc): ERROR:")
    # flux-queue(1), flux-resource(1) (flux-core man pages); banks: LLNL/HPC-Tutorials flux/section4.md (read 2026-11-28)
    site_queries = {
        "account": "flux account view-user $USER  (your banks)",
        "queue": "flux queue list",
        "partition": "flux queue list",
        "max_walltime": "flux queue list  (TIME LIMIT per queue)",
        "gpu_count": "flux resource list  (NGPUS per node)",
        "devices_per_node": "flux resource list",
        "value": "flux queue list; flux resource list",
    }
    # LC publishes its machines' limits with `news job.lim.<machine>` (../shared/research notes §4.1; unconfirmed)
    limit_advice = ("wait until your running jobs finish (flux jobs) or cancel one (flux cancel <jobid>); "
                    "the machine's limits: news job.lim.<machine> (LLNL LC)")
    # flux-core doc/man1/common/job-environment-variables.rst (read 2026-11-28): what a job's tasks get
    job_environment = frozenset({"FLUX_JOB_ID", "FLUX_JOB_SIZE", "FLUX_JOB_NNODES", "FLUX_TASK_RANK",
                                 "FLUX_TASK_LOCAL_ID", "FLUX_JOB_TMPDIR", "FLUX_URI"})
    not_ported = frozenset(_NOT_PORTED)
    export_option = "env"  # --env=RULE
    passes_arguments = True  # flux-batch(1): "any remaining free arguments supplied as SCRIPT arguments"
    launchers = frozenset({"flux"})
    fields = {
        "nodes": ("nodes", _nodes), "ntasks": ("ntasks", positive), "ppn": ("ntasks_per_node", positive),
        "cores_per_task": ("cpus_per_task", positive), "gpus_per_task": ("gpus_per_task", gpu_count),
        "gpus_per_node": ("gpus_per_node", gpu_count), "time_limit": ("walltime", _time),
        "bank": ("account", as_written), "queue": ("queue", as_written), "requires": ("constraint", as_written),
    }
    example = ("#!/bin/bash\n#flux: -N 2 -n 8 -g 1\n#flux: -t 90m\n#flux: --bank=abc -q debug\n"
               "flux run -N2 -n8 -g1 python train.py\n")

    def after_prefix(self, stripped: str) -> Optional[str]:
        match = _SENTINEL.match(stripped)
        return stripped[match.end():] if match else None

    def walltime(self, value: str) -> Optional[str]:
        return flux_walltime(value)

    def write_walltime(self, walltime: str) -> str:
        return fsd(walltime)

    def finish(self, last: dict[str, Option], d: Directives) -> None:
        d.spreads = not d.nodes_given and bool(d.ntasks)
        if d.gpus_per_node is None and d.gpus_per_task:
            tasks = d.ntasks_per_node or per_node(d.ntasks, d.nodes or (None if d.spreads else 1))
            if tasks:
                d.set("gpus_per_node", d.gpus_per_task * tasks, d.lines["gpus_per_task"])
        d.account = real(d.account, "account", d)
        d.queue = real(d.queue, "queue", d)

    def _value(self, name: str, value: str) -> str:
        """A walltime given as HH:MM:SS (a fix, the gate) written as Flux reads one."""
        return fsd(value) if name == "time_limit" and _CLOCK.fullmatch(value) else value

    def format_option(self, name: str, value: Optional[str]) -> list[str]:
        spelled = f"--{_LONG.get(name, name.replace('_', '-'))}"
        return [f"{spelled}={self._value(name, value)}" if value else spelled]

    def with_value(self, option: Option, value: str) -> list[str]:
        return super().with_value(option, self._value(option.name, value))

    def knows(self, spelling: str) -> bool:
        return spelling.startswith("--") or super().knows(spelling)

    def _sentinel(self, text: str) -> Optional[str]:
        for line in text.splitlines():
            match = _SENTINEL.match(line.strip())
            if match:
                return match.group(0)
        return None

    def _same_sentinel(self, new: str, old: str) -> str:
        """Lines this unit wrote with its own sentinel, in the one the script uses: flux batch refuses
        a file whose directives mix `#flux:` and `# flux:`."""
        sentinel = self._sentinel(old)
        if sentinel in (None, self.prefix):
            return new
        return re.sub(rf"(?m)^{re.escape(self.prefix)}(?= )", sentinel, new)

    def rewrite(self, text: str, keep) -> tuple[str, list[Option]]:
        new, changed = super().rewrite(text, keep)
        return self._same_sentinel(new, text), changed

    def set_option(self, text: str, spelling: str, value: Optional[str]) -> str:
        return self._same_sentinel(super().set_option(text, spelling, value), text)

    def capped(self, last: dict[str, Option], max_nodes: int, max_seconds: int) -> list[str]:
        return self.capped_size(last, "nodes", "time_limit", max_nodes, max_seconds)


FLUX = register(Flux())
