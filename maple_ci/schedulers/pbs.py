"""PBS (PBS Professional/OpenPBS, and Torque's forms): `#PBS` directives with their `-l` resources
(PBS Pro `select=2:ncpus=64:ngpus=4` chunks, `-lselect=2`, Torque `nodes=2:ppn=4:gpus=4`, NCI Gadi's
job-wide `ncpus=48,ngpus=4`), [[HH:]MM:]SS walltimes, job variables, and qsub/qdel.

Sources (read 2026-11-25): PBS Professional Reference Guide, qsub and "select"
(https://help.altair.com/2022.1.0/PBS%20Professional/PBSReferenceGuide2022.1.pdf), Torque's qsub
(https://docs.adaptivecomputing.com/torque/), NCI Gadi's job script
(https://opus.nci.org.au, "Job Submission", job-wide ncpus/ngpus).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Optional

from ..launchers import Spec
from . import register
from .base import (DirectiveError, Directives, Option, Scheduler, as_written, gpu_count, per_node, positive, real,
                   seconds_to_walltime)

# qsub's options: the letters that take a value, and the names this unit gives the ones it reads.
_VALUED = "AacejklmMNopqrSuvWJP"
_NAMES = {"A": "account", "q": "queue", "P": "project", "N": "job_name"}
# One chunk of a PBS select: `[N:]resource=value[:resource=value...]`
_CHUNK = re.compile(r"(?:(\d+)(?::|$))?((?:[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.-]+(?::|$))*)")
# What a job asks for that a port does not translate: output, join, arrays, dependencies, mail, rerun, keep.
_NOT_PORTED = frozenset("oejJWmMrk")


def pbs_walltime(value: str) -> str:
    """PBS walltime ([[HH:]MM:]SS, a bare number is seconds) as HH:MM:SS."""
    parts = value.strip().split(":")
    if not 1 <= len(parts) <= 3 or not all(part.isdigit() for part in parts):
        raise ValueError(f"{value!r} is not a PBS walltime; write e.g. 01:30:00")
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + int(part)
    return seconds_to_walltime(seconds)


def _walltime(value: str, d: Directives) -> str:
    return pbs_walltime(value)


def _chunks(value: str) -> list[list]:
    """[count, resources] of each chunk of a select statement; ValueError for one that is not a chunk."""
    chunks = []
    for chunk in value.split("+"):
        match = _CHUNK.fullmatch(chunk)
        if not chunk or not match or not (match[1] or match[2]):
            raise ValueError(f"PBS select chunk {chunk!r} is not [N:]resource=value[:...]")
        chunks.append([int(match[1] or 1), match[2].rstrip(":")])
    return chunks


def cap_select(value: str, max_nodes: int) -> str:
    """A PBS select statement with its chunks' total capped at max_nodes (the last chunks give way
    first): `1:ngpus=4+511:ncpus=64` is 512 chunks, not 1. ValueError for one that is not chunks."""
    chunks = _chunks(value)
    excess = sum(number for number, _ in chunks) - max_nodes
    for chunk in reversed(chunks):
        cut = max(min(excess, chunk[0] - (1 if chunk is chunks[0] else 0)), 0)
        chunk[0], excess = chunk[0] - cut, excess - cut
    return "+".join(f"{number}:{resources}".rstrip(":") for number, resources in chunks if number)


def _read_chunk(chunk: str) -> tuple[int, dict]:
    """(nodes, resources) of one chunk: `2:ncpus=64:ngpus=4`, Torque's `2:ppn=4:gpus=4`, `ngpus=4`."""
    fields = chunk.split(":")
    if not fields[0].isdigit() and "=" not in fields[0]:
        raise ValueError(f"cannot read the PBS select chunk {chunk!r}")
    return (int(fields[0]) if fields[0].isdigit() else 1), dict(f.partition("=")[::2] for f in fields if "=" in f)


def _ranks(chunks: list[tuple[int, dict]]) -> Optional[int]:
    """Ranks per node: the last chunk's mpiprocs (PBS Pro) or ppn (Torque) that gives one."""
    values = [value for _, r in chunks if (value := r.get("mpiprocs") or r.get("ppn") or "").isdigit()]
    return int(values[-1]) if values else None


def _gpus(chunks: list[tuple[int, dict]]) -> Optional[int]:
    """GPUs per node where every chunk asks for the same number (ngpus, Torque's gpus)."""
    gpus = {r.get("ngpus") or r.get("gpus") for _, r in chunks}
    only = gpus.pop() if len(gpus) == 1 else None
    return int(only) if only and only.isdigit() else None


def _filled(total: Optional[int], per_node_count: Optional[int]) -> int:
    """Nodes a job-wide total fills, `per_node_count` a node; 0 when either is not known."""
    return math.ceil(total / per_node_count) if total and per_node_count else 0


def _read_chunks(value: str, d: Directives, line: int) -> None:
    """select=2:ncpus=64:ngpus=4 (chunks joined by +) or Torque nodes=2:ppn=4:gpus=4."""
    d.nodes_given = True
    chunks = [_read_chunk(chunk) for chunk in value.split("+")]
    d.set("nodes", sum(nodes for nodes, _ in chunks) or None, line)
    for name, number in (("ntasks_per_node", _ranks(chunks)), ("gpus_per_node", _gpus(chunks))):
        if number is not None:
            d.set(name, number, line)


class Pbs(Scheduler):
    name = "pbs"
    prefix = "#PBS"
    spec = Spec(aliases={c: _NAMES.get(c, c) for c in _VALUED + "VhzIXfF"},
                values=frozenset(_NAMES.get(c, c) for c in _VALUED), value_default=False)
    submit = ("qsub",)
    cancel = ("qdel",)
    script_suffix = "pbs"
    var_prefix = "PBS_"
    # Sources (read 2026-11-25): PBS Pro/OpenPBS, the Reference Guide above (qsub, environment);
    # Torque's PBS_NUM_NODES/PBS_NUM_PPN/PBS_NP: https://docs.adaptivecomputing.com/torque/;
    # PBS_JOBSIZE is not PBS's: ALCF's ezpz helpers set it to the node count (github.com/saforem2/ezpz, unconfirmed elsewhere)
    job_vars = {
        "submit_dir": ("PBS_O_WORKDIR",),
        "job_id": ("PBS_JOBID",),
        "job_name": ("PBS_JOBNAME",),
        "array_index": ("PBS_ARRAY_INDEX",),
        # the whole array's id, 1234[] (PBS Pro; MetaCentrum's PBS Pro guide, wiki.metacentrum.cz, read 2026-11-29)
        "array_job_id": ("PBS_ARRAY_ID",),
        "nodes": ("PBS_JOBSIZE", "PBS_NUM_NODES"),
        "ranks": ("PBS_NP",),
        "ranks_per_node": ("PBS_NUM_PPN",),
        "node_file": ("PBS_NODEFILE",),
        # NCI Gadi's: the job's CPUs and GPUs in all, and the CPUs of one node of its queue (NCI, "PBS
        # Environment Variables", https://opus.nci.org.au, read 2026-11-29; other PBS sites set none of them)
        "cpus": ("PBS_NCPUS",),
        "gpus": ("PBS_NGPUS",),
        "node_cpus": ("PBS_NCI_NCPUS_PER_NODE",),
        # HPE Cray PALS's mpiexec (ALCF's Polaris, Aurora, Sophia) sets these in each rank: its node's
        # index in the job and its index on the node. Read 2026-11-29: HPE's pals.h lists them among the
        # variables for applications, and flux-coral2's cray_pals plugin (a PALS stand-in,
        # github.com/flux-framework/flux-coral2) sets PALS_NODEID to the node's index; ALCF's
        # affinity script reads PALS_LOCAL_RANKID (https://docs.alcf.anl.gov/polaris/running-jobs/).
        # Unset in the batch shell and under other launchers (Gadi's Open MPI: unconfirmed there).
        "node_index": ("PALS_NODEID",),
        "local_rank": ("PALS_LOCAL_RANKID",),
        # TMPDIR: "the job-specific temporary directory for this job", made by PBS on each node of the
        # job (PBS Professional Reference Guide, "Environment Variables"; read 2026-11-29 as sites'
        # job scripts quote that line: the Guide's own page unconfirmed)
        "node_tmp": ("TMPDIR",),
    }
    # PBS Professional User's Guide, "Environment Variables"
    # (https://help.altair.com/2022.1.0/PBS%20Professional/PBSUserGuide2022.1.pdf, read 2026-11-25), and NCI
    # Gadi's resource counts (https://opus.nci.org.au, "PBS Environment Variables", read 2026-11-25)
    job_environment = frozenset(f"PBS_{name}" for name in (
        "JOBID", "JOBNAME", "NODEFILE", "O_WORKDIR", "O_HOST", "O_QUEUE", "QUEUE", "ENVIRONMENT", "JOBDIR",
        "O_HOME", "O_LOGNAME", "O_SHELL", "O_SYSTEM", "TASKNUM", "NODENUM", "ARRAY_INDEX", "ARRAY_ID",
        "NCPUS", "NGPUS", "VMEM", "NNODES"))
    error_patterns = (r"(?:^|[ \t'\"])qsub: ",  # qsub only speaks when it refuses a job (a wrapper may quote it)
                      r"=>> PBS: job killed")
    # qstat -Q, pbsnodes (the Reference Guide above); sbank is ALCF's
    site_queries = {
        "account": "sbank-list-allocations (ALCF; other PBS sites: the allocation's web page, unconfirmed)",
        "queue": "qstat -Q",
        "max_walltime": "qstat -Qf <queue>  (resources_max.walltime)",
        "devices_per_node": "pbsnodes -a | grep ngpus",
        "mem": "qstat -Qf <queue>  (resources_max.mem), or the memory of the node: pbsnodes -a",
    }
    limit_advice = ("wait until your running jobs finish (qstat -u $USER) or delete one (qdel <jobid>); "
                    "the queue's limits: qstat -Qf <queue>")
    helper_vars = frozenset({"PBS_JOBSIZE"})  # named like PBS's but set by site helpers: no PBS job has it by itself
    site_options = frozenset({"account", "project", "queue", "walltime", "filesystems"})
    gate_kept = frozenset({"place", "filesystems"})
    size_options = frozenset({"select", "walltime"})
    fix_options = dict.fromkeys(("account", "project", "queue", "walltime", "filesystems", "select", "place", "mem",
                                 "ncpus", "ngpus"), "word")
    export_option = "v"
    not_ported = _NOT_PORTED
    fields = {"walltime": ("walltime", _walltime), "ngpus": ("gpus", gpu_count), "ncpus": ("cpus", positive),
              "account": ("account", as_written), "queue": ("queue", as_written)}
    example = ("#!/bin/bash\n#PBS -l select=2:ngpus=4\n#PBS -l walltime=1:30:00\n#PBS -A abc\n#PBS -q debug\n"
               "mpiexec python train.py\n")

    def walltime(self, value: str) -> Optional[str]:
        return pbs_walltime(value)

    def _letters(self) -> set:
        return set(self.spec.aliases.values())

    def parse_words(self, words: list[str], line: int) -> list[Option]:
        """qsub's options, each `-l` resource (comma-separated) an option of its own by its name."""
        found = []
        for option in super().parse_words(words, line):
            if option.name != "l" or not option.value:
                found.append(option)
                continue
            for item in option.value.split(","):
                key, equals, value = item.partition("=")
                found.append(Option(key, value if equals else None, line, ("-l", item)))
        return found

    def canonical(self, spelling: str) -> str:
        spelling = spelling.strip()
        if spelling.startswith("-l") and len(spelling) > 2:  # "-l walltime", "-lwalltime"
            return spelling[2:].strip().partition("=")[0]
        return super().canonical(spelling)

    def knows(self, spelling: str) -> bool:
        return spelling.startswith("-l") or super().knows(spelling)

    def display(self, option: Option) -> str:
        return option.words[0][:2] if option.name in self._letters() else f"-l {option.name}"

    def finish(self, last: dict[str, Option], d: Directives) -> None:
        chunks = [o for o in (last.get("select"), last.get("nodes")) if o and o.value]
        for option in sorted(chunks, key=lambda o: o.line):
            try:
                _read_chunks(option.value, d, option.line)
            except ValueError as exc:
                d.errors.append(DirectiveError(f"line {option.line}: {exc}", "nodes", option.line))
        self._account(last.get("project"), d)
        d.queue = real(d.queue, "queue", d)

    def on_nodes(self, d: Directives, cpus_per_node: int, gpus_per_node: Optional[int]) -> Directives:
        """NCI Gadi's job-wide `-l ncpus=96 -l ngpus=8` (no select, no nodes): PBS places the job on
        as many nodes as its CPUs or its GPUs fill, whichever is more (gpuvolta: 48 CPUs and 4 GPUs a
        node, so 8 GPUs are 2 nodes whatever CPUs are asked)."""
        if not cpus_per_node and not gpus_per_node:
            return self._one_chunk(d)
        fills = {"gpus": _filled(d.gpus, gpus_per_node), "cpus": _filled(d.cpus, cpus_per_node)}
        most = max(fills, key=fills.get)  # the total that needs more nodes, and whose line says so
        nodes = fills[most]
        if d.nodes_given or not nodes:
            return d
        return replace(d, nodes=nodes, gpus_per_node=d.gpus_per_node or per_node(d.gpus, nodes),
                       lines={"nodes": d.lines.get(most), "gpus_per_node": d.lines.get("gpus"), **d.lines})

    @staticmethod
    def _one_chunk(d: Directives) -> Directives:
        """Job-wide totals on nodes of no known shape (the source machine is not known): PBS Pro makes a
        request without select one chunk of those resources, so one node (PBS Professional Reference
        Guide, "select", job-wide resources converted to a single chunk; unconfirmed, not read today)."""
        if d.nodes_given or d.nodes or not d.gpus or d.gpus_per_node:
            return d
        return replace(d, nodes=1, gpus_per_node=d.gpus, lines={"nodes": d.lines.get("gpus"),
                                                                "gpus_per_node": d.lines.get("gpus"), **d.lines})

    @staticmethod
    def _account(project: Optional[Option], d: Directives) -> None:
        if d.account is None and project is not None:  # PBS Pro's project (-P): what NCI Gadi charges
            d.set("account", project.value, project.line)
        d.account = real(d.account, "account", d)

    def format_option(self, name: str, value: Optional[str]) -> list[str]:
        letter = next((c for c, n in self.spec.aliases.items() if n == name), None)
        if letter is None:
            return ["-l", f"{name}={value}" if value else name]
        return [f"-{letter}", value] if value else [f"-{letter}"]

    def with_value(self, option: Option, value: str) -> list[str]:
        if option.name not in self._letters():
            return self.format_option(option.name, value)
        return super().with_value(option, value)

    def capped(self, last: dict[str, Option], max_nodes: int, max_seconds: int) -> list[str]:
        select = last.get("select")
        walltime = last.get("walltime")
        seconds = self.seconds(walltime.value if walltime else None, max_seconds)
        return [*self.format_option("select", cap_select(select.value, max_nodes) if select and select.value else "1"),
                *self.format_option("walltime", seconds_to_walltime(seconds))]


PBS = register(Pbs())
