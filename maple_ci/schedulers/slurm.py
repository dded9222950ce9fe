"""Slurm: `#SBATCH` directives (sbatch's options, the same grammar as srun's), its walltime forms,
job variables, and sbatch/scancel.

Sources (read 2026-11-25): https://slurm.schedmd.com/sbatch.html (options, "OUTPUT ENVIRONMENT
VARIABLES", --time formats), https://slurm.schedmd.com/srun.html (aliases: launchers/grammars.yaml).
"""

from __future__ import annotations

import re
from typing import Optional

from ..launchers import grammar, launcher
from ..launchers.options import gres_gpus
from . import register
from .base import (Directives, Option, Scheduler, as_written, gpu_count, per_node, positive, real,
                   seconds_to_walltime)


def slurm_walltime(value: str) -> Optional[str]:
    """Slurm --time (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS) as HH:MM:SS; None if unlimited."""
    value = value.strip()
    if value.upper() in ("UNLIMITED", "INFINITE", "-1"):
        return None
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", value)
    if not match:
        raise ValueError(f"{value!r} is not a Slurm time; write e.g. 90, 01:30:00 or 1-12:00:00")
    days, first, second, third = match.groups()
    if days is not None:  # D-HH[:MM[:SS]]
        parts = (int(days) * 24 + int(first), int(second or 0), int(third or 0))
    elif second is None:  # a bare number is minutes
        parts = (0, int(first), 0)
    elif third is None:  # MM:SS
        parts = (0, int(first), int(second))
    else:
        parts = (int(first), int(second), int(third))
    return seconds_to_walltime(parts[0] * 3600 + parts[1] * 60 + parts[2])


def _nodes(value: str, d: Directives) -> Optional[int]:
    """`--nodes=N` or a min-max range (given, but no fixed count)."""
    d.nodes_given = True
    if value.isdigit() and int(value) > 0:
        return int(value)
    # `--nodes=<num_nodes>` is the user's to give (--nodes 2), as an account placeholder is
    if not re.fullmatch(r"\d+[-:]\d+", value) and real(value, "nodes", d):
        raise ValueError(f"expects a number or a min-max range, got {value!r}")
    return None


def _gres_gpus(value: str, d: Directives) -> Optional[int]:
    return gres_gpus(value)


def _time(value: str, d: Directives) -> Optional[str]:
    return slurm_walltime(value)


_NOT_PORTED = frozenset({"output", "error", "array", "dependency", "signal", "requeue", "mail_type", "mail_user",
               "open_mode", "mem", "mem_per_cpu", "mem_per_gpu", "exclusive", "begin", "reservation",
               "licenses", "export", "comment", "kill_on_invalid_dep", "uenv", "view",
                          "environment"})


def _gpus_per_node(d: Directives) -> None:
    """GPUs per node from a job-wide count or per task, where no per-node count is given."""
    if d.gpus_per_node is None and d.gpus:  # without -N and without -n, Slurm allocates one node
        d.set("gpus_per_node", per_node(d.gpus, d.nodes or (None if d.spreads else 1)), d.lines["gpus"])
    # --ntasks over --nodes, as flux.py reads its slots: an even split (the test cluster's Slurm 22.05 gives
    # `-N 2 -n 8 --gpus-per-task=1` 4 tasks per node; an uneven count is the select plugin's to lay out)
    tasks = d.ntasks_per_node or per_node(d.ntasks, d.nodes or (None if d.spreads else 1))
    if d.gpus_per_node is None and d.gpus_per_task and tasks:
        d.set("gpus_per_node", d.gpus_per_task * tasks, d.lines["gpus_per_task"])


class Slurm(Scheduler):
    name = "slurm"
    prefix = "#SBATCH"
    spec = grammar("srun")  # sbatch's directives are srun's options
    submit = ("sbatch",)
    cancel = ("scancel",)
    script_suffix = "sbatch"
    var_prefix = "SLURM_"
    job_vars = {
        "submit_dir": ("SLURM_SUBMIT_DIR",),
        "job_id": ("SLURM_JOB_ID", "SLURM_JOBID"),
        "job_name": ("SLURM_JOB_NAME",),
        "array_index": ("SLURM_ARRAY_TASK_ID",),
        "array_job_id": ("SLURM_ARRAY_JOB_ID",),  # the whole array's id (job_array.html, read 2026-11-29)
        # https://slurm.schedmd.com/job_array.html (read 2026-11-29): set in each array task
        "array_count": ("SLURM_ARRAY_TASK_COUNT",),
        "array_min": ("SLURM_ARRAY_TASK_MIN",),
        "array_max": ("SLURM_ARRAY_TASK_MAX",),
        "nodes": ("SLURM_NNODES", "SLURM_JOB_NUM_NODES"),
        "ranks": ("SLURM_NTASKS", "SLURM_NPROCS"),
        "ranks_per_node": ("SLURM_NTASKS_PER_NODE", "SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE"),
        "node_list": ("SLURM_JOB_NODELIST", "SLURM_NODELIST"),
        "rank": ("SLURM_PROCID",),
        "local_rank": ("SLURM_LOCALID",),
        "cpus_per_task": ("SLURM_CPUS_PER_TASK",),
        # the CPUs the job holds on the node the batch script runs on (sbatch(1), OUTPUT ENVIRONMENT
        # VARIABLES, https://slurm.schedmd.com/sbatch.html, read 2026-11-29)
        "cpus_on_node": ("SLURM_CPUS_ON_NODE",),
        # srun(1): "SLURM_NODEID: the relative node ID of the current node" (https://slurm.schedmd.com/srun.html,
        # read 2026-11-29); the batch script runs on the job's first node, whose ID is 0
        "node_index": ("SLURM_NODEID",),
        # not Slurm's own: a node-local folder per job that some sites' Slurm sets up, Mila's
        # (https://docs.mila.quebec/Userguide.html) and the Digital Research Alliance of Canada's
        # (https://docs.alliancecan.ca/wiki/Using_node-local_storage), both read 2026-11-29
        "node_tmp": ("SLURM_TMPDIR",),
    }
    # The batch script is the batch step's one task, on the job's first node: the test cluster's Slurm
    # gives it SLURM_NODEID=0, SLURM_LOCALID=0 and SLURM_PROCID=0 (checked 2026-11-29 with sbatch)
    batch_task = {"SLURM_NODEID": "0", "SLURM_LOCALID": "0", "SLURM_PROCID": "0"}
    # sbatch(1), "OUTPUT ENVIRONMENT VARIABLES", https://slurm.schedmd.com/sbatch.html, read 2026-11-25
    job_environment = frozenset({"SLURMD_NODENAME", *(f"SLURM_{name}" for name in (
        "JOB_ID", "JOBID", "JOB_NAME", "JOB_NODELIST", "NODELIST", "JOB_NUM_NODES", "NNODES", "NTASKS", "NPROCS",
        "NTASKS_PER_NODE", "TASKS_PER_NODE", "CPUS_ON_NODE", "CPUS_PER_TASK", "JOB_CPUS_PER_NODE", "TRES_PER_TASK",
        "GPUS", "GPUS_ON_NODE", "GPUS_PER_NODE", "GPUS_PER_TASK", "JOB_GPUS", "NTASKS_PER_GPU", "MEM_PER_NODE",
        "MEM_PER_CPU", "MEM_PER_GPU", "JOB_PARTITION", "JOB_ACCOUNT", "JOB_QOS", "CLUSTER_NAME", "SUBMIT_DIR",
        "SUBMIT_HOST", "JOB_USER", "JOB_UID", "JOB_GID", "NODEID", "PROCID", "LOCALID", "ARRAY_JOB_ID",
        "ARRAY_TASK_ID", "ARRAY_TASK_COUNT", "ARRAY_TASK_MIN", "ARRAY_TASK_MAX", "RESTART_COUNT",
        "JOB_START_TIME", "JOB_END_TIME", "TOPOLOGY_ADDR", "TOPOLOGY_ADDR_PATTERN", "CONF", "GTIDS", "NODE_ALIASES",
        "PRIO_PROCESS", "TASK_PID", "WORKING_CLUSTER", "SCRIPT_CONTEXT", "JOB_RESERVATION", "JOB_LICENSES",
        "JOB_DEPENDENCY", "HET_SIZE", "SHARDS_ON_NODE", "UMASK"))})
    error_patterns = (r"\b(?:sbatch|salloc|srun|slurmstepd): (?:error|fatal)\b", r"Batch job submission failed",
                      r"Unable to allocate resources", r"DUE TO TIME LIMIT", r"allocation failure:")
    # sacctmgr, sinfo, scontrol, seff man pages (https://slurm.schedmd.com/, read 2026-11-25)
    site_queries = {
        "account": "sacctmgr show assoc user=$USER format=account%30,partition,qos%40",
        "qos": "sacctmgr show assoc user=$USER format=account%30,qos%60",
        "partition": 'sinfo -o "%P %l %G"',
        "queue": 'sinfo -o "%P %l %G"',
        "max_walltime": "scontrol show partition  (MaxTime)",
        "max_submit": "sacctmgr show assoc user=$USER format=maxsubmit; sacctmgr show qos format=name,maxsubmitjobsperuser",
        "gpu_flag": 'sinfo -o "%P %G"; scontrol show partition  (TRES: gres/gpu or gpu:<type>)',
        "gpu_count": 'sinfo -o "%P %G"',
        "gpu_type": 'sinfo -o "%P %G"  (gpu:<type>:<count>)',
        "devices_per_node": 'sinfo -o "%P %G"',
        "constraint": 'sinfo -o "%P %f"',
        "value": "scontrol show partition  (the partition's limits and defaults)",
        "mem": "seff <jobid>  (Memory Utilized), or sacct -j <jobid> -o MaxRSS",
        "gpus": 'the GPUs the program uses (one per process); per node: sinfo -o "%P %G"',
        "node_memory": 'sinfo -o "%P %m"  (memory per node in MB; scontrol show node <node>: RealMemory)',
        # Values the catalogue's fixes name (templates/errors/slurm-codes.yaml, slurm-pending.yaml)
        "default_account": "sacctmgr show user $USER format=defaultaccount",
        "reservation": "scontrol show reservation  (ReservationName, Users, Accounts, StartTime)",
        "license": "scontrol show lic",
        "wckey": "sacctmgr show user $USER withwckeys",
        "time_before_maintenance": "scontrol show reservation  (StartTime of the MAINT reservation, minus now)",
        "workdir": "an existing directory the job can write: echo $SCRATCH",
        "max_nodes": "scontrol show partition <partition>  (MaxNodes); sacctmgr show qos format=name,maxtresperjob",
        "qos_limit": "sacctmgr show qos format=name%20,maxtresperjob%40,maxwall,mintresperjob%30",
    }
    limit_advice = ("wait until your running jobs finish (squeue -u $USER) or cancel one (scancel <jobid>); "
                    "your limits: sacctmgr show assoc user=$USER format=account%30,qos%40,maxjobs,maxsubmit")
    fixed_vars = {"SLURM_NNODES": "nodes", "SLURM_JOB_NUM_NODES": "nodes", "SLURM_NTASKS": "tasks",
                  "SLURM_NPROCS": "tasks", "SLURM_NTASKS_PER_NODE": "ntasks_per_node",
                  "SLURM_GPUS_PER_NODE": "gpus_per_node", "SLURM_GPUS_ON_NODE": "gpus_per_node",
                  "SLURM_CPUS_PER_TASK": "cpus_per_task"}
    # Options that name things of one site: another machine has no such account, QOS, node feature,
    # license or reservation, its partitions have their own names, and its walltime its own limits.
    # CSCS's uenv plugin (--uenv, --view) and Container Engine (--environment=<edf>.toml), docs.cscs.ch/software/ml/pytorch/
    # (read 2026-11-28): another sbatch refuses them as unrecognized options.
    site_options = frozenset({"account", "partition", "qos", "constraint", "licenses", "reservation", "time", "uenv",
                              "view", "environment"})
    # What shapes the allocation, which a center passes through (the rest it leaves to the site).
    gate_kept = frozenset({"ntasks", "ntasks_per_node", "cpus_per_task", "gpus", "gpus_per_node", "gpus_per_task",
                           "gres", "constraint", "partition", "job_name", "gpu_bind", "exclusive"})
    size_options = frozenset({"nodes", "time"})
    fix_options = dict.fromkeys(("account", "partition", "qos", "constraint", "time", "nodes", "ntasks", "ntasks_per_node",
                                 "cpus_per_task", "cpus_per_gpu", "gpus", "gpus_per_node", "gpus_per_task", "gres", "mem",
                                 "mem_per_cpu", "mem_per_gpu", "exclusive", "network", "gpu_bind",
                                 # the catalogue's (slurm-codes.yaml): names the site gives, found with site_queries
                                 "reservation", "licenses", "wckey"), "word") | {"chdir": "person"}
    node_features = True
    not_ported = _NOT_PORTED
    launchers = frozenset({"srun"})
    export_option = "export"
    passes_arguments = True
    # sbatch(1) --wrap: "Sbatch will wrap the specified command string in a simple "sh" shell script, and
    # submit that script" (https://slurm.schedmd.com/sbatch.html, read 2026-11-29)
    command_option = "wrap"
    verify_backend = "slurm"
    fields = {
        "nodes": ("nodes", _nodes), "ntasks": ("ntasks", positive), "ntasks_per_node": ("ntasks_per_node", positive),
        "cpus_per_task": ("cpus_per_task", positive), "gpus_per_node": ("gpus_per_node", gpu_count),
        "gres": ("gpus_per_node", _gres_gpus), "gpus": ("gpus", gpu_count), "gpus_per_task": ("gpus_per_task", gpu_count),
        "time": ("walltime", _time), "account": ("account", as_written), "image": ("image", as_written),
        "constraint": ("constraint", as_written),
    }
    example = ("#!/bin/bash\n#SBATCH -N 2 --gpus-per-node=4\n#SBATCH -t 1:30:00 -A abc\n#SBATCH --qos=debug\n"
               "srun python train.py\n")

    def walltime(self, value: str) -> Optional[str]:
        return slurm_walltime(value)

    def device_env(self, gpus: Optional[int], per_task: Optional[int]) -> dict:
        """The batch step's GPUs on its first node (https://slurm.schedmd.com/gres.html "GPU Management", read
        2026-11-29: set "for the sbatch command" too) and counts (sbatch(1) OUTPUT ENVIRONMENT VARIABLES:
        SLURM_GPUS_PER_TASK only with --gpus-per-task). The test cluster's Slurm 22.05 gives `--gres=gpu:1`
        CUDA_VISIBLE_DEVICES=0 and a job that asks for no GPUs none of these (tests/test_process_model.py).
        Real Slurm sets SLURM_GPUS_PER_NODE for --gpus-per-node only; the directives' reading does not tell it
        from --gres, so the trace sets it for both."""
        ids = ",".join(str(i) for i in range(gpus)) if gpus else None
        counts = {"SLURM_GPUS_ON_NODE": gpus, "SLURM_GPUS_PER_NODE": gpus, "SLURM_GPUS_PER_TASK": gpus and per_task}
        return {**dict.fromkeys(launcher("srun").trace["devices"]["env"], ids), "SLURM_JOB_GPUS": ids,
                **{name: value and str(value) for name, value in counts.items()}}

    def finish(self, last: dict[str, Option], d: Directives) -> None:
        d.spreads = not d.nodes_given and bool(d.ntasks or d.gpus)
        _gpus_per_node(d)
        d.account = real(d.account, "account", d)
        queue = last.get("qos") or last.get("partition")  # the QOS is the finer choice where both are given
        if queue is not None:
            d.set("queue", real(queue.value, "queue", d), queue.line)

    def format_option(self, name: str, value: Optional[str]) -> list[str]:
        return [f"--{name.replace('_', '-')}" + (f"={value}" if value else "")]

    def knows(self, spelling: str) -> bool:
        return spelling.startswith("--") or (len(spelling) == 2 and spelling[1] in self.spec.aliases)

    def capped(self, last: dict[str, Option], max_nodes: int, max_seconds: int) -> list[str]:
        return self.capped_size(last, "nodes", "time", max_nodes, max_seconds)


SLURM = register(Slurm())
