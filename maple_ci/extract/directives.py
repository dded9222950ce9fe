"""#SBATCH and #PBS directives: what the job asks the scheduler for, read as sbatch and qsub
read them (up to the first command), and the scheduler variables whose values they fix."""

import re
import shlex
from dataclasses import dataclass, field
from typing import Optional

from ..errors import MapleError
from .options import PBS, SLURM, parse_options


def seconds_to_walltime(seconds: int) -> str:
    if seconds >= 10000 * 3600:
        raise ValueError("is over 9999 hours; no queue allows that")
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


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
        hours, minutes, seconds = int(days) * 24 + int(first), int(second or 0), int(third or 0)
    elif second is None:  # bare number = minutes
        hours, minutes, seconds = 0, int(first), 0
    elif third is None:  # MM:SS
        hours, minutes, seconds = 0, int(first), int(second)
    else:
        hours, minutes, seconds = int(first), int(second), int(third)
    return seconds_to_walltime(hours * 3600 + minutes * 60 + seconds)


def pbs_walltime(value: str) -> str:
    """PBS walltime ([[HH:]MM:]SS, a bare number is seconds) as HH:MM:SS."""
    parts = value.strip().split(":")
    if not 1 <= len(parts) <= 3 or not all(part.isdigit() for part in parts):
        raise ValueError(f"{value!r} is not a PBS walltime; write e.g. 01:30:00")
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + int(part)
    return seconds_to_walltime(seconds)


def count(value: Optional[str]) -> Optional[int]:
    """A positive count from a resolved value: '4' or a typed GPU spec 'a100:4'."""
    if value is None:
        return None
    match = re.fullmatch(r"(?:[\w.-]+:)?(\d+)", value.strip())
    return int(match.group(1)) if match and int(match.group(1)) > 0 else None


def per_node(total: Optional[int], nodes: Optional[int]) -> Optional[int]:
    return total // nodes if total and nodes and total % nodes == 0 else None


@dataclass
class Directives:
    scheduler: str = "none"
    nodes: Optional[int] = None
    nodes_given: bool = False  # a range like 2-4 is given but not a fixed count
    spreads: bool = False  # -n or --gpus without -N: Slurm may spread over several nodes
    gpus_per_node: Optional[int] = None
    ntasks: Optional[int] = None
    ntasks_per_node: Optional[int] = None
    cpus_per_task: Optional[int] = None
    walltime: Optional[str] = None
    account: Optional[str] = None
    queue: Optional[str] = None
    constraint: Optional[str] = None  # -C as written (gpu&hbm80g): the source's own cluster keeps it
    image: Optional[str] = None  # Shifter's `#SBATCH --image=docker:...`, used by `srun shifter python ...`
    dropped: list = field(default_factory=list)  # directives a port does not translate, as written
    notes: list = field(default_factory=list)

    def tasks(self) -> Optional[int]:
        if self.ntasks:
            return self.ntasks
        return self.ntasks_per_node * self.nodes if self.ntasks_per_node and self.nodes else None


_DIRECTIVE = re.compile(r"#(SBATCH|PBS)\s+(.*)")


def _directive_tokens(text: str) -> list[tuple[int, str, list[str]]]:
    """(line, scheduler, tokens) of each directive before the first command, as sbatch/qsub read them."""
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break  # both schedulers stop reading directives at the first command
        match = _DIRECTIVE.match(stripped)
        if not match:
            continue
        try:
            tokens = shlex.split(match.group(2), comments=True)
        except ValueError as exc:
            raise MapleError(f"line {lineno}: cannot read the #{match.group(1)} line ({exc})") from exc
        found.append((lineno, "slurm" if match.group(1) == "SBATCH" else "pbs", tokens))
    return found


def _directive_int(value: str, option: str, lineno: int) -> int:
    if not value.isdigit() or int(value) < 1:
        raise MapleError(f"line {lineno}: {option} expects a positive number, got {value!r}")
    return int(value)


def _gpu_spec(value: str, option: str, lineno: int) -> int:
    number = count(value)
    if number is None:
        raise MapleError(f"line {lineno}: {option} expects a GPU count like 4 or a100:4, got {value!r}")
    return number


def _gres_gpus(value: str) -> Optional[int]:
    """GPUs per node in --gres=gpu[:type][:count][,other...]; plain `gpu` means one."""
    for item in value.split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] == "gpu":
            return int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
    return None


def _slurm_directives(found: list, d: Directives) -> None:
    total_gpus = gpus_per_task = None
    qos = partition = None
    for lineno, opts in found:
        for name, values in opts.items():
            value = values[-1]
            if name == "nodes":
                d.nodes_given = True
                d.nodes = int(value) if value.isdigit() and int(value) > 0 else None
                # `--nodes=<num_nodes>` is the user's to give (--nodes 2), as an account placeholder is
                if d.nodes is None and not re.fullmatch(r"\d+[-:]\d+", value) and _real(value, "nodes", d):
                    raise MapleError(f"line {lineno}: --nodes expects a number or a min-max range, got {value!r}")
            elif name == "ntasks":
                d.ntasks = _directive_int(value, "--ntasks", lineno)
            elif name == "ntasks_per_node":
                d.ntasks_per_node = _directive_int(value, "--ntasks-per-node", lineno)
            elif name == "cpus_per_task":
                d.cpus_per_task = _directive_int(value, "--cpus-per-task", lineno)
            elif name == "gpus_per_node":
                d.gpus_per_node = _gpu_spec(value, "--gpus-per-node", lineno)
            elif name == "gres":
                d.gpus_per_node = _gres_gpus(value) or d.gpus_per_node
            elif name == "gpus":
                total_gpus = _gpu_spec(value, "--gpus", lineno)
            elif name == "gpus_per_task":
                gpus_per_task = _gpu_spec(value, "--gpus-per-task", lineno)
            elif name == "time":
                try:
                    d.walltime = slurm_walltime(value)
                except ValueError as exc:
                    raise MapleError(f"line {lineno}: --time {exc}") from exc
            elif name == "account":
                d.account = _real(value, "account", d)
            elif name == "qos":
                qos = value
            elif name == "image":
                d.image = value
            elif name == "constraint":
                d.constraint = value
            elif name in _SLURM_NOT_PORTED:
                d.dropped.append(f"--{name.replace('_', '-')}" + (f"={value}" if value else ""))
            elif name == "partition":
                partition = value
    d.spreads = not d.nodes_given and bool(d.ntasks or total_gpus)
    if d.gpus_per_node is None:  # without -N and without -n, Slurm allocates one node
        d.gpus_per_node = per_node(total_gpus, d.nodes or (None if d.spreads else 1))
    if d.gpus_per_node is None and gpus_per_task and d.ntasks_per_node:
        d.gpus_per_node = gpus_per_task * d.ntasks_per_node
    d.queue = _real(qos or partition, "queue", d)  # the QOS is the finer choice where both are given


def _pbs_directives(found: list, d: Directives) -> None:
    project_only = False
    for lineno, opts in found:
        for resources in opts.get("l", []):
            for item in resources.split(","):
                key, _, value = item.partition("=")
                if key in ("select", "nodes"):
                    _pbs_select(value, d, lineno)
                elif key == "walltime":
                    try:
                        d.walltime = pbs_walltime(value)
                    except ValueError as exc:
                        raise MapleError(f"line {lineno}: -l walltime: {exc}") from exc
        d.dropped += [f"-{name} {value}" for name in _PBS_NOT_PORTED for value in opts.get(name, [])]
        if "A" in opts:
            d.account = _real(opts["A"][-1], "account", d)
            project_only = False
        elif "P" in opts and (d.account is None or project_only):
            # PBS Pro's project (-P): what NCI Gadi charges; the account when no -A names one
            d.account, project_only = _real(opts["P"][-1], "account", d), True
        if "q" in opts:
            d.queue = _real(opts["q"][-1], "queue", d)


def _pbs_select(value: str, d: Directives, lineno: int) -> None:
    """select=2:ncpus=64:ngpus=4 (chunks joined by +) or Torque nodes=2:ppn=4:gpus=4."""
    d.nodes_given = True
    nodes, gpus = 0, set()
    for chunk in value.split("+"):
        fields = chunk.split(":")
        count = int(fields[0]) if fields[0].isdigit() else 1
        if not fields[0].isdigit() and "=" not in fields[0]:
            raise MapleError(f"line {lineno}: cannot read the PBS select chunk {chunk!r}")
        nodes += count
        resources = dict(f.partition("=")[::2] for f in fields if "=" in f)
        gpus.add(resources.get("ngpus") or resources.get("gpus"))
        if resources.get("ppn", "").isdigit():
            d.ntasks_per_node = int(resources["ppn"])
        if resources.get("mpiprocs", "").isdigit():
            d.ntasks_per_node = int(resources["mpiprocs"])
    d.nodes = nodes or None
    if len(gpus) == 1 and (only := gpus.pop()) and only.isdigit():
        d.gpus_per_node = int(only)


# What documentation writes where a user's own value goes: <project_name>, YOUR_ACCOUNT, $PBS_ACCOUNT,
# mXXXX, [account]. A port never carries one: the target's header asks for the real value instead.
_PLACEHOLDER = re.compile(r"(?i).*[<>\[\]{}$].*|.*x{3,}.*|your[_-]?\w*|(?:project|account|allocation|"
                          r"queue|partition)(?:[_-]?(?:name|id|code))?|changeme|todo|tbd|none|\.\.\.|.*some(?:user|one|group|prof).*")


# What a job asks for that a port does not translate: output names, arrays, dependencies, signals,
# mail. Listed in the port's header so the user can put back what the job needs.
_SLURM_NOT_PORTED = {"output", "error", "array", "dependency", "signal", "requeue", "mail_type", "mail_user",
                     "open_mode", "mem", "mem_per_cpu", "mem_per_gpu", "exclusive", "begin", "reservation",
                     "licenses", "export", "comment", "kill_on_invalid_dep"}
_PBS_NOT_PORTED = ("o", "e", "j", "J", "W", "m", "M", "r", "k")


def _real(value: Optional[str], what: str, d: "Directives") -> Optional[str]:
    if value is None or not _PLACEHOLDER.fullmatch(value):
        return value
    d.notes.append(f"the source's {what} {value!r} is a placeholder; give the real one with --{what}")
    return None


def parse_directives(text: str) -> Directives:
    d = Directives()
    found = _directive_tokens(text)
    if not found:
        return d
    d.scheduler = found[0][1]
    parsed = [(lineno, parse_options(tokens, SLURM if sched == "slurm" else PBS)[0])
              for lineno, sched, tokens in found if sched == d.scheduler]
    (_slurm_directives if d.scheduler == "slurm" else _pbs_directives)(parsed, d)
    return d


def runtime_vars(d: Directives) -> dict[str, str]:
    """Scheduler variables whose value the directives fix (d.nodes is the job's node count)."""
    known = {}
    if d.scheduler == "slurm":
        if d.nodes:
            known["SLURM_NNODES"] = known["SLURM_JOB_NUM_NODES"] = str(d.nodes)
        if d.tasks():
            known["SLURM_NTASKS"] = known["SLURM_NPROCS"] = str(d.tasks())
        if d.ntasks_per_node:
            known["SLURM_NTASKS_PER_NODE"] = str(d.ntasks_per_node)
        if d.gpus_per_node:
            known["SLURM_GPUS_PER_NODE"] = known["SLURM_GPUS_ON_NODE"] = str(d.gpus_per_node)
        if d.cpus_per_task:
            known["SLURM_CPUS_PER_TASK"] = str(d.cpus_per_task)
    return known
