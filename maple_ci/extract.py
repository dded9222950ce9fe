"""Extraction agent: turn a launch script, or a request written in words, into a JobIntent.

Scripts are read the way the scheduler and the shell read them: #SBATCH/#PBS directives up to the
first command, then the shell body parsed with bashlex. Of all the commands, the one that launches
the training program is kept (a parallel launcher running Python beats a plain `python` line) and
followed through wrappers (srun -> bash -c '...' -> torchrun -> train.py). Counts are resolved from
literal values, shell variables set earlier and the scheduler's own variables when the directives
fix them; anything only known at run time stays None. Nothing is guessed to fill a gap: the gap
goes to `missing`, and the bot asks.

Requests in words ("train ViT with torchrun on 8 GPUs across two nodes") are read with regexes over
the lower-cased text, after number words become digits and near-miss keywords ("torchrn") are
corrected with difflib. A cluster named there is the source only when the text says the job runs
there now; "port to X" names a target, which is not part of a JobIntent.
"""

from __future__ import annotations

import ast
import difflib
import json
import operator
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import bashlex
import yaml

from .errors import MapleError
from .files import MAX_SOURCE_BYTES, read_text
from .intent import REQUIRED_FOR_PORT, JobIntent
from .profiles import load_profiles


# Variables every target recomputes for itself; copying them across clusters would be wrong.
RENDEZVOUS_VARS = frozenset(
    {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK",
     "MASTER_ADDR", "MASTER_PORT"}
)

# ---------------------------------------------------------------------------------------------
# Reading the input


# One word naming a script (a folder in it, or a script suffix) was meant as a file, not a request.
_LOOKS_LIKE_PATH = re.compile(r"\S*/\S*|\S+\.(?:sh|bash|sbatch|slurm|pbs|qsub|job|batch)")


def load_source(arg: str) -> tuple[str, str]:
    """(name, text) of a script file, or of `arg` itself when it is not an existing path."""
    path = Path(arg)
    try:
        exists = "\n" not in arg and path.exists()
    except (OSError, ValueError):  # a long request or one with odd characters is not a path
        exists = False
    if not exists:
        if _LOOKS_LIKE_PATH.fullmatch(arg):
            raise MapleError(f"no such file: {arg}")
        _check_text(arg, "the input text")
        return "<text>", arg
    return arg, read_script(path, arg)


def read_script(path: Path, name: str) -> str:
    """The text of a launch script file the user named, refused with a clear error when it is a
    directory, a device, too large, binary or not UTF-8. `name` is how messages call it."""
    return read_text(path, name)


def _check_text(text: str, what: str) -> None:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        raise MapleError(f"{what} is larger than the {MAX_SOURCE_BYTES // 1024} KiB limit")
    if "\0" in text:
        raise MapleError(f"{what} contains NUL bytes; give a text launch script or request")


_LAUNCH_LINE = re.compile(
    r"^\s*(?:\w+=\S*\s+)*(?:srun|mpiexec|mpirun|ibrun|torchrun|deepspeed|accelerate\s+launch|python[\d.]*)\s"
    r"(?=.*(?:\s-|\.py\b))",
    re.M,
)
_SCRIPT_HINT = re.compile(r"\A#!|^\s*#(?:SBATCH|PBS)\s", re.M)
# "accelerate launch train.py on two nodes": a command quoted inside a sentence is a request
_PROSE = re.compile(r"\b(?:on|across|with|using|over|for)\s+(?:[\w-]+\s+){0,2}"
                    r"(?:nodes?|gpus?|servers?|machines?|hours?|minutes?)\b", re.I)


def extract(text: str, name: str = "<text>", base_dir: Optional[str | Path] = None) -> JobIntent:
    """JobIntent of a launch script or of a request in words, whichever `text` is.

    Config files a script names are looked up in `base_dir`, by default the script's folder."""
    _check_text(text, name)
    one_line_prose = "\n" not in text.strip() and _PROSE.search(text)
    if _SCRIPT_HINT.search(text) or (_LAUNCH_LINE.search(text) and not one_line_prose):
        if base_dir is None and name != "<text>" and Path(name).is_file():
            base_dir = Path(name).parent
        return extract_script(text, base_dir, name)
    return extract_request(text)


# ---------------------------------------------------------------------------------------------
# Small value helpers


def _seconds_to_walltime(seconds: int) -> str:
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
    return _seconds_to_walltime(hours * 3600 + minutes * 60 + seconds)


def pbs_walltime(value: str) -> str:
    """PBS walltime ([[HH:]MM:]SS, a bare number is seconds) as HH:MM:SS."""
    parts = value.strip().split(":")
    if not 1 <= len(parts) <= 3 or not all(part.isdigit() for part in parts):
        raise ValueError(f"{value!r} is not a PBS walltime; write e.g. 01:30:00")
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + int(part)
    return _seconds_to_walltime(seconds)


def _count(value: Optional[str]) -> Optional[int]:
    """A positive count from a resolved value: '4' or a typed GPU spec 'a100:4'."""
    if value is None:
        return None
    match = re.fullmatch(r"(?:[\w.-]+:)?(\d+)", value.strip())
    return int(match.group(1)) if match and int(match.group(1)) > 0 else None


def _per_node(total: Optional[int], nodes: Optional[int]) -> Optional[int]:
    return total // nodes if total and nodes and total % nodes == 0 else None


# ---------------------------------------------------------------------------------------------
# Command-line option parsing shared by directives and launchers


@dataclass(frozen=True)
class _Spec:
    """How a program reads its options: aliases map a spelling to one name; names in `flags`
    take no value, names in `pairs` take two; the rest take one if `value_default`."""

    aliases: dict
    flags: frozenset = frozenset()
    values: frozenset = frozenset()
    pairs: frozenset = frozenset()
    value_default: bool = True

    def takes_value(self, name: str) -> bool:
        if name in self.flags:
            return False
        return self.value_default or name in self.values


def _parse_options(argv: list[str], spec: _Spec) -> tuple[dict[str, list], list[str]]:
    """Options up to the first operand, as {name: [values]}; the operand and what follows."""
    opts: dict[str, list] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            return opts, argv[i + 1:]
        if not token.startswith("-") or token == "-":
            break
        body, eq, value = token.lstrip("-").partition("=")
        if token.startswith("--"):
            name = spec.aliases.get(body, body.replace("-", "_"))
        elif body in spec.aliases:  # single-dash long options: -np, -ppn, -genv
            name = spec.aliases[body]
        elif len(token) > 2 and token[1] in spec.aliases:  # attached short value: -N2, -lselect=2
            name, eq, value = spec.aliases[token[1]], "=", token[2:]
        else:
            name = spec.aliases.get(body, body.replace("-", "_"))
        i += 1
        if eq:
            values = [value]
        elif name in spec.pairs and i + 1 < len(argv):
            values, i = argv[i:i + 2], i + 2
        elif spec.takes_value(name) and i < len(argv):
            values, i = [argv[i]], i + 1
            # MPICH's `-env NAME VALUE` versus PALS's `--env NAME=VALUE`
            if name == "env" and "=" not in values[0] and i < len(argv):
                values, i = [f"{values[0]}={argv[i]}"], i + 1
        else:
            values = [""]
        opts.setdefault(name, []).extend(values)
    return opts, argv[i:]


def _last(opts: dict, name: str) -> Optional[str]:
    values = opts.get(name)
    return values[-1] if values else None


_SLURM = _Spec(
    aliases={"A": "account", "N": "nodes", "n": "ntasks", "t": "time", "q": "qos", "p": "partition",
             "G": "gpus", "c": "cpus_per_task", "C": "constraint", "J": "job_name", "o": "output",
             "e": "error", "w": "nodelist", "x": "exclude", "D": "chdir", "d": "dependency",
             "a": "array", "b": "begin", "i": "input", "L": "licenses", "M": "clusters",
             "m": "distribution", "S": "core_spec", "F": "nodefile", "B": "extra_node_info",
             "T": "threads", "r": "relative", "l": "label", "u": "unbuffered", "v": "verbose",
             "K": "kill_on_bad_exit", "k": "no_kill", "X": "disable_status", "Q": "quiet",
             "s": "oversubscribe", "O": "overcommit", "H": "hold", "I": "immediate",
             "E": "preserve_env", "Z": "no_allocate", "h": "help", "W": "wait",
             "tasks-per-node": "ntasks_per_node"},
    flags=frozenset({"exclusive", "overcommit", "oversubscribe", "contiguous", "hold", "requeue",
                     "no_requeue", "spread_job", "use_min_nodes", "parsable", "wait", "test_only",
                     "ignore_pbs", "label", "unbuffered", "verbose", "quiet", "pty", "no_kill",
                     "multi_prog", "exact", "whole", "overlap", "disable_status", "kill_on_bad_exit",
                     "immediate", "reboot", "no_allocate", "preserve_env", "x11", "propagate",
                     "send_libs", "get_user_env", "help", "usage", "nice"}),
)

_PBS = _Spec(
    aliases={c: c for c in "AacejklmMNopqrSuvWJP"},
    values=frozenset("AacejklmMNopqrSuvWJP"),
    value_default=False,
)

# MPICH/PALS (-n, --ppn, --depth, --env), Open MPI (-np, -N, --map-by, -x, --mca), TACC ibrun (-n, -o)
_MPI = _Spec(
    aliases={"n": "np", "np": "np", "ppn": "ppn", "npernode": "ppn", "N": "ppn", "d": "depth",
             "f": "hostfile", "machinefile": "hostfile", "hostfile": "hostfile", "H": "host",
             "host": "host", "x": "export", "env": "env", "genv": "env", "envall": "envall",
             "genvall": "envall", "mca": "mca", "gmca": "mca", "wdir": "wdir", "o": "offset",
             "cpu-bind": "cpu_bind", "map-by": "map_by", "bind-to": "bind_to"},
    values=frozenset({"np", "ppn", "depth", "cpu_bind", "hostfile", "host", "export", "env",
                      "map_by", "bind_to", "rank_by", "wdir", "prefix", "mem_bind", "pmi",
                      "offset", "envlist", "launcher", "rankfile", "output_filename", "label_mode"}),
    pairs=frozenset({"mca"}),
    value_default=False,
)

_TORCHRUN = _Spec(
    aliases={"m": "module"},
    flags=frozenset({"standalone", "module", "no_python", "run_path", "virtual_local_rank", "use_env"}),
)

_DEEPSPEED = _Spec(
    aliases={"H": "hostfile", "i": "include", "e": "exclude", "num_accelerators": "num_gpus"},
    flags=frozenset({"module", "no_python", "no_local_rank", "no_ssh_check", "force_multi",
                     "save_pid", "elastic_training", "bind_cores_to_rank", "no_ssh"}),
)

_ACCELERATE = _Spec(
    aliases={"m": "module", "q": "quiet"},
    flags=frozenset({"cpu", "multi_gpu", "tpu", "mps", "use_deepspeed", "use_fsdp", "use_megatron_lm",
                     "use_xpu", "ipex", "module", "no_python", "quiet", "debug", "same_network",
                     "tpu_use_cluster", "tpu_use_sudo", "enable_cpu_affinity", "downcast_bf16"}),
)

_CONTAINER = _Spec(  # apptainer/singularity exec|run, podman-hpc run, shifter
    aliases={"B": "bind", "H": "home", "W": "workdir", "o": "overlay", "e": "env", "v": "volume",
             "V": "volume", "w": "workdir"},
    values=frozenset({"bind", "env", "home", "workdir", "overlay", "pwd", "env_file", "mount",
                      "scratch", "security", "hostname", "network", "network_args", "app",
                      "fusemount", "image", "module", "volume", "name", "entrypoint"}),
    value_default=False,
)

_PASSTHROUGH = _Spec(  # env, numactl, taskset, stdbuf, nice: options, then the real command
    aliases={"u": "unset", "N": "cpunodebind", "m": "membind", "C": "physcpubind", "c": "cpu_list",
             "i": "interleave", "p": "preferred", "o": "output", "n": "adjustment"},
    values=frozenset({"unset", "cpunodebind", "membind", "physcpubind", "cpu_list", "interleave",
                      "preferred", "output", "adjustment"}),
    value_default=False,
)

_RUNNER = _Spec(  # `uv run`, `pipenv run`, `poetry run`, `conda run -n env`: options, then the command
    aliases={"n": "name", "p": "prefix"},
    values=frozenset({"with", "python", "project", "directory", "env_file", "group", "extra", "name",
                      "prefix", "index_url"}),
    value_default=False,
)

_MPI_LAUNCHERS = {"srun", "mpiexec", "mpirun", "ibrun"}
_DL_LAUNCHERS = {"torchrun", "deepspeed", "accelerate"}
_PLAIN_WRAPPERS = {"time", "nohup", "exec", "command"}
_PYTHON = re.compile(r"python[\d.]*")
_PYTHON_TOOLS = {"pip", "venv", "ensurepip", "site", "pip3"}  # `python -m pip` is not a job


# ---------------------------------------------------------------------------------------------
# Directives


@dataclass
class _Directives:
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

    def tasks(self) -> Optional[int]:
        if self.ntasks:
            return self.ntasks
        return self.ntasks_per_node * self.nodes if self.ntasks_per_node and self.nodes else None


def _directive_tokens(text: str) -> list[tuple[int, str, list[str]]]:
    """(line, scheduler, tokens) of each directive before the first command, as sbatch/qsub read them."""
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break  # both schedulers stop reading directives at the first command
        match = re.match(r"#(SBATCH|PBS)\s+(.*)", stripped)
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
    count = _count(value)
    if count is None:
        raise MapleError(f"line {lineno}: {option} expects a GPU count like 4 or a100:4, got {value!r}")
    return count


def _gres_gpus(value: str) -> Optional[int]:
    """GPUs per node in --gres=gpu[:type][:count][,other...]; plain `gpu` means one."""
    for item in value.split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] == "gpu":
            return int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
    return None


def _slurm_directives(found: list, d: _Directives) -> None:
    total_gpus = gpus_per_task = None
    qos = partition = None
    for lineno, opts in found:
        for name, values in opts.items():
            value = values[-1]
            if name == "nodes":
                d.nodes_given = True
                d.nodes = int(value) if value.isdigit() and int(value) > 0 else None
                if d.nodes is None and not re.fullmatch(r"\d+[-:]\d+", value):
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
                d.account = value
            elif name == "qos":
                qos = value
            elif name == "partition":
                partition = value
    d.spreads = not d.nodes_given and bool(d.ntasks or total_gpus)
    if d.nodes is None and not d.nodes_given and not d.spreads:
        d.nodes = 1  # Slurm's default allocation when nothing asks for more
    if d.gpus_per_node is None:
        d.gpus_per_node = _per_node(total_gpus, d.nodes)
    if d.gpus_per_node is None and gpus_per_task and d.ntasks_per_node:
        d.gpus_per_node = gpus_per_task * d.ntasks_per_node
    d.queue = qos or partition  # the QOS is the finer choice where both are given


def _pbs_directives(found: list, d: _Directives) -> None:
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
        if "A" in opts:
            d.account = opts["A"][-1]
        if "q" in opts:
            d.queue = opts["q"][-1]
    if d.nodes is None and not d.nodes_given:
        d.nodes = 1  # PBS gives one chunk when no select is given


def _pbs_select(value: str, d: _Directives, lineno: int) -> None:
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


def _parse_directives(text: str) -> _Directives:
    d = _Directives()
    found = _directive_tokens(text)
    if not found:
        return d
    d.scheduler = found[0][1]
    parsed = [(lineno, _parse_options(tokens, _SLURM if sched == "slurm" else _PBS)[0])
              for lineno, sched, tokens in found if sched == d.scheduler]
    (_slurm_directives if d.scheduler == "slurm" else _pbs_directives)(parsed, d)
    return d


def _runtime_vars(d: _Directives) -> dict[str, Optional[str]]:
    """Scheduler variables whose value the directives fix."""
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


# ---------------------------------------------------------------------------------------------
# Shell parsing and variable expansion

_ARITH_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.Div: operator.floordiv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}


def _arith(expr: str, variables: dict) -> Optional[int]:
    """Value of a $(( )) expression over known integer variables; None if any is unknown."""
    unknown = []

    def name(match):
        value = variables.get(match.group(1))
        if value is None or not value.strip().lstrip("-").isdigit():
            unknown.append(match.group(1))
            return "0"
        return value.strip()

    expr = re.sub(r"\$\{?([A-Za-z_]\w*)\}?", r"\1", expr)  # inside $(( )) a name needs no $
    expr = re.sub(r"\b([A-Za-z_]\w*)\b", name, expr)
    if unknown:
        return None

    def evaluate(node):
        if isinstance(node, ast.Expression):
            return evaluate(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -evaluate(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH_OPS:
            return _ARITH_OPS[type(node.op)](evaluate(node.left), evaluate(node.right))
        raise ValueError("unsupported")

    try:
        return evaluate(ast.parse(expr.strip(), mode="eval"))
    except (SyntaxError, ValueError, ZeroDivisionError):
        return None


def _closing(text: str, start: int) -> int:
    """Index just past the parenthesis that closes the one at `start`; -1 if none does."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return -1


def _substitution(command: str, scan: "_Scan") -> Optional[str]:
    """The few command substitutions whose output the directives fix: counting allocated nodes."""
    counts_lines = re.search(r"\bwc\s+-l\b", command)
    if counts_lines and re.search(r"PBS_NODEFILE|scontrol\s+show\s+hostnames?|SLURM_JOB_NODELIST", command):
        return str(scan.nodes) if scan.nodes else None
    return None


def _expand(word: str, scan: "_Scan") -> Optional[str]:
    """`word` with $VAR, ${VAR}, ${VAR:-x}, $((...)) and known $(...) replaced; None if any part
    is only known at run time."""
    out, i = [], 0
    variables = scan.vars
    while i < len(word):
        if word.startswith("$((", i):
            end = _closing(word, i + 1)
            value = _arith(word[i + 3:end - 2], variables) if end > 0 else None
            if value is None:
                return None
            out.append(str(value))
            i = end
        elif word.startswith("$(", i) or word[i] == "`":
            quoted = word[i] == "`"
            end = word.find("`", i + 1) + 1 if quoted else _closing(word, i + 1)
            value = _substitution(word[i + (1 if quoted else 2):end - 1], scan) if end > 0 else None
            if value is None:
                return None
            out.append(value)
            i = end
        elif word.startswith("${", i):
            end = word.find("}", i)
            if end < 0:
                return None
            match = re.fullmatch(r"([A-Za-z_]\w*)(?:(:?[-=])(.*))?", word[i + 2:end])
            if not match:
                return None  # ${#X}, ${X:0:4} and the like: run-time string work
            value = variables.get(match.group(1))
            if value is None and match.group(2):
                value = match.group(3)
            if value is None:
                return None
            out.append(value)
            i = end + 1
        elif word[i] == "$" and (match := re.match(r"[A-Za-z_]\w*|[0-9#@*?$!]", word[i + 1:])):
            value = variables.get(match.group(0))
            if value is None:
                return None
            out.append(value)
            i += 1 + match.end()
        else:
            out.append(word[i])
            i += 1
    return "".join(out)


_SUBSTITUTION = re.compile(r"\$\(|`")


def _hide_substitutions(text: str) -> tuple[str, dict[str, str]]:
    """Swap each one-line $(( )), $( ) and `...` for a placeholder word: bashlex cannot parse
    $(( )), and without parentheses most lines can be split by shlex instead of bashlex."""
    hidden: dict[str, str] = {}
    out, i = [], 0
    while match := _SUBSTITUTION.search(text, i):
        start = match.start()
        if match.group(0) == "`":
            end = text.find("`", start + 1) + 1
        else:
            end = _closing(text, start + 1)
        if end <= start or "\n" in text[start:end]:  # unbalanced or spanning lines: leave to bashlex
            out.append(text[i:match.end()])
            i = match.end()
            continue
        key = f"__maple_sub_{len(hidden)}__"
        hidden[key] = text[start:end]
        out.append(text[i:start] + key)
        i = end
    out.append(text[i:])
    return "".join(out), hidden


def _bash_syntax_error(text: str) -> Optional[str]:
    """bash's own complaint about `text` (bash -n parses, nothing runs): '' when bash accepts it,
    None when there is no bash to ask."""
    try:
        result = subprocess.run(["bash", "-n", "/dev/stdin"], input=text, capture_output=True,
                                encoding="utf-8", errors="replace", timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode == 0:
        return ""
    first = result.stderr.strip().splitlines()[0] if result.stderr.strip() else "syntax error"
    return first.replace("/dev/stdin: ", "", 1)


_NOT_SIMPLE = re.compile(r"[<>()`]|\\$|(?:^|[;&|]\s*)(?:if|then|elif|else|fi|for|while|until|do|done|case|"
                         r"esac|function|select|\{|\}|\[\[|!)(?:\s|$)")
_OPERATORS = {"&&", "||", ";", "|", "&", ";;", "|&"}
_NEEDS_SHLEX = re.compile(r"[\"'\\;&|#]")  # without these, splitting on blanks is exact


def _simple_commands(line: str) -> Optional[list[list[str]]]:
    """The commands of a line that needs no shell grammar beyond && || ; | (most of any script:
    exports, module loads, echo lines), split by shlex, much faster than bashlex; None otherwise."""
    if not line.strip() or line.lstrip().startswith("#"):
        return []
    if _NOT_SIMPLE.search(line):
        return None
    if not _NEEDS_SHLEX.search(line):
        return [line.split()]
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    try:
        for token in lexer:
            if token in _OPERATORS:
                commands.append([])
            else:
                commands[-1].append(token)
    except ValueError:  # an open quote: the command goes on over the next lines
        return None
    return [command for command in commands if command]


def _wants_more(exc: Exception) -> bool:
    return "EOF" in str(exc) or "end-of-file" in str(exc)


def _walk_text(text: str, scan: "_Scan", where: str) -> None:
    """Run every command of `text` through `_command_words`. Simple lines are split directly; the rest
    goes to bashlex a chunk at a time, a chunk growing while bashlex wants more input (open quote,
    `if` without `fi`, line continuation). A script bash itself rejects is an error naming the
    line; in a script bash accepts, a line bashlex cannot read ([[ ]], case, arrays) is skipped."""
    prepared, hidden = _hide_substitutions(text)
    lines = prepared.splitlines(keepends=True)
    start, checked = 0, False
    while start < len(lines):
        commands = _simple_commands(lines[start])
        if commands is not None:
            for words in commands:
                _command_words([_restore(word, hidden) for word in words], scan)
            start += 1
            continue
        end = start + 1  # bashlex's cost grows faster than the text: give it one command at a time
        while True:
            while end < len(lines) and lines[end - 1].rstrip("\n").endswith("\\"):
                end += 1  # a continued line belongs to the same command
            chunk = "".join(lines[start:end])
            try:
                trees = bashlex.parse(chunk)
            except Exception as exc:  # bashlex raises several types, AttributeError included
                if _wants_more(exc) and end < len(lines):
                    end = min(len(lines), start + 2 * (end - start))  # doubling keeps long blocks linear
                    continue
                if not checked:
                    problem = _bash_syntax_error(text)
                    if problem is None:  # no bash to ask: bashlex's view, with the line
                        chunk_line = chunk.count("\n", 0, getattr(exc, "position", 0) or 0)
                        problem = f"line {start + 1 + chunk_line}: {exc}"
                    if problem:
                        raise MapleError(f"{where}{problem}; fix the shell syntax there") from exc
                    checked = True
                trees, end = [], start + 1
            break
        for tree in trees:
            _visit(tree, hidden, scan)
        start = end


# ---------------------------------------------------------------------------------------------
# Walking the script


@dataclass
class _Launch:
    """One command that starts the training program, followed through its wrappers."""

    stages: list  # [(launcher, {option: [raw values]})], outermost first
    entry: Optional[str]
    args: list[str]
    variables: dict  # shell variables when the command ran, to resolve option values
    score: int = 0


@dataclass
class _Scan:
    vars: dict
    nodes: Optional[int]
    base_dir: Optional[Path]
    env: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict)  # variables as written, for `export NAME` after NAME=...
    modules: list = field(default_factory=list)
    python_env: Optional[str] = None
    launches: list = field(default_factory=list)
    depth: int = 0
    positional: Optional[list] = None  # arguments of a bash -c string or wrapper script, as written

    def expand(self, word: Optional[str]) -> Optional[str]:
        return None if word is None else _expand(word, self)


def _visit(node, hidden: dict, scan: _Scan) -> None:
    if node.kind == "command":
        words = [_restore(p.word, hidden) for p in node.parts if p.kind in ("assignment", "word")]
        _command_words(words, scan)
        return
    # compound commands, lists, pipelines, if/for/while bodies and function bodies; words are not
    # visited, so a command substitution such as $(srun hostname) is never taken for the job
    for child in getattr(node, "parts", []) + getattr(node, "list", []):
        if hasattr(child, "kind") and child.kind not in ("word", "reservedword", "operator", "pipe"):
            _visit(child, hidden, scan)


def _restore(word: str, hidden: dict) -> str:
    if "__maple_sub_" not in word:
        return word
    return re.sub(r"__maple_sub_\d+__", lambda m: hidden.get(m.group(0), m.group(0)), word)


def _command_words(words: list[str], scan: _Scan) -> None:
    """One simple command: leading NAME=value words, then the command and its arguments."""
    if scan.positional is not None and any(word in ("$@", "${@}") for word in words):
        # "$@" stands for the arguments, word for word (maple-ci's own `bash -c '... exec "$@"' x ...`)
        words = [part for word in words for part in (scan.positional if word in ("$@", "${@}") else [word])]
    command = _drop_assignments(words)
    if not command:
        for assignment in words:
            name, _, value = assignment.partition("=")
            scan.vars[name] = scan.expand(value)
            scan.raw[name] = value
        return
    words = command
    head = words[0]
    if head == "export":
        _export(words[1:], scan)
    elif head in ("module", "ml"):
        _module(words, scan)
    elif head in ("conda", "mamba", "micromamba") and words[1:2] == ["activate"]:
        scan.python_env = " ".join([head, "activate", *words[2:3]])
    elif head in ("source", ".") and len(words) > 1:
        if words[1] == "activate":  # old conda spelling
            scan.python_env = " ".join(["conda", "activate", *words[2:3]])
        elif words[1].endswith("/activate"):
            scan.python_env = f"source {words[1]}"
    else:
        launch = _chain(words, scan, [])
        if launch and launch.score:
            scan.launches.append(launch)


def _export(words: list[str], scan: _Scan) -> None:
    for word in words:
        if word.startswith("-"):
            continue
        name, eq, value = word.partition("=")
        if eq:
            scan.vars[name] = scan.expand(value)
            scan.raw[name] = value
        elif name in scan.raw:
            value = scan.raw[name]
        else:
            continue
        if name not in RENDEZVOUS_VARS:
            scan.env[name] = _portable(value, scan)


def _portable(value: str, scan: "_Scan") -> str:
    """`value` with the script's own variables and arguments ($1) filled in, since the generated
    script will not set them; values that use scheduler or user variables stay as written."""
    names = re.findall(r"\$\{?([A-Za-z_]\w*|\d)", value)
    if names and all(name in scan.raw or name.isdigit() for name in names):
        return scan.expand(value) or value
    return value


def _module(words: list[str], scan: _Scan) -> None:
    args = [w for w in words[1:] if not w.startswith("-")]
    if words[0] == "ml" and (not args or args[0] not in ("load", "add", "unload", "rm", "del", "swap", "switch")):
        # `ml a b` loads, `ml -a` unloads; `ml purge`, `ml use` and the rest do neither
        if args and args[0] in ("purge", "use", "list", "avail", "spider", "show", "save", "restore", "reset"):
            return
        scan.modules.extend(args)
        for w in words[1:]:
            if w.startswith("-") and w[1:] in scan.modules:
                scan.modules.remove(w[1:])
        return
    if not args:
        return
    action, names = args[0], args[1:]
    if action in ("load", "add", "try-load"):
        scan.modules.extend(n for n in names if n not in scan.modules)
    elif action in ("unload", "rm", "del"):
        scan.modules[:] = [m for m in scan.modules if m not in names]
    elif action in ("swap", "switch") and len(names) == 2:
        old, new = names
        if old in scan.modules:
            scan.modules[:] = [new if m == old else m for m in scan.modules]
        else:
            scan.modules.append(new)


def _drop_assignments(argv: list[str]) -> list[str]:
    i = 0
    while i < len(argv) and re.match(r"[A-Za-z_]\w*=", argv[i]):
        i += 1
    return argv[i:]


def _chain(argv: list[str], scan: _Scan, stages: list) -> Optional[_Launch]:
    """Follow a command through launchers and wrappers to the program it runs."""
    argv = _drop_assignments(argv)
    if not argv:
        return None
    head = argv[0].rsplit("/", 1)[-1]
    if head in _PLAIN_WRAPPERS:
        return _chain(argv[1:], scan, stages)
    if head in ("env", "numactl", "taskset", "stdbuf", "nice"):
        opts, rest = _parse_options(argv[1:], _PASSTHROUGH)
        if head == "taskset" and rest and "cpu_list" not in opts:
            rest = rest[1:]  # the affinity mask
        return _chain(rest, scan, stages)
    if head in ("uv", "pipenv", "poetry", "conda", "mamba", "micromamba") and argv[1:2] == ["run"]:
        return _chain(_parse_options(argv[2:], _RUNNER)[1], scan, stages)
    if head in ("apptainer", "singularity", "podman-hpc") and argv[1:2] in (["exec"], ["run"]):
        _, rest = _parse_options(argv[2:], _CONTAINER)
        return _chain(rest[1:], scan, stages)  # rest[0] is the image
    if head == "shifter":
        _, rest = _parse_options(argv[1:], _CONTAINER)
        return _chain(rest, scan, stages)
    command_flag = next((i for i, a in enumerate(argv[1:], 1) if re.fullmatch(r"-[a-z]*c[a-z]*", a)), None)
    if head in ("bash", "sh", "zsh") and command_flag:  # -c, or combined as in `sh -xeuc '...'`
        if command_flag + 1 >= len(argv):
            return None
        # after the string come $0 (a name) and then $1, $2...
        return _inner_script(argv[command_flag + 1], scan, stages, argv[command_flag + 3:])
    if head in ("bash", "sh") and len(argv) > 1:
        return _program(argv[1:], scan, stages)
    if head.endswith(".sh") and len(argv) > 1 and (_PYTHON.fullmatch(argv[1].rsplit("/", 1)[-1])
                                                   or argv[1] in _MPI_LAUNCHERS | _DL_LAUNCHERS):
        return _chain(argv[1:], scan, stages)  # an affinity wrapper such as set_affinity_gpu_polaris.sh
    if head in _MPI_LAUNCHERS:
        opts, rest = _parse_options(argv[1:], _SLURM if head == "srun" else _MPI)
        return _chain(rest, scan, [*stages, (head, opts)])
    if head == "torchrun":
        return _dl_stage("torchrun", argv[1:], _TORCHRUN, scan, stages)
    if head == "deepspeed":
        return _dl_stage("deepspeed", argv[1:], _DEEPSPEED, scan, stages)
    if head == "accelerate" and argv[1:2] == ["launch"]:
        return _dl_stage("accelerate", argv[2:], _ACCELERATE, scan, stages)
    if _PYTHON.fullmatch(head):
        return _python(argv, scan, stages)
    return _program(argv, scan, stages)


def _program(argv: list[str], scan: _Scan, stages: list) -> Optional[_Launch]:
    """Any other program: a wrapper script we can read is followed, else it is the entrypoint."""
    wrapper = _wrapper_text(_portable(argv[0], scan), scan)
    if wrapper is not None:
        launch = _inner_script(wrapper, scan, stages, argv[1:], "wrapper script")
        if launch:
            return launch
    return _finish(stages, _portable(argv[0], scan), argv[1:], scan.vars)


def _wrapper_text(program: str, scan: _Scan) -> Optional[str]:
    """The text of a wrapper script the job runs (TACC's `ibrun ./run.sh`), when it lies in the
    script's folder and is readable; None otherwise, and the wrapper stays the entrypoint."""
    if scan.base_dir is None or "$" in program or not (program.endswith(".sh") or "/" in program):
        return None
    path = Path(program) if Path(program).is_absolute() else scan.base_dir / program
    try:
        if path.is_file() and path.stat().st_size <= MAX_SOURCE_BYTES:
            return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    return None


def _python(argv: list[str], scan: _Scan, stages: list) -> Optional[_Launch]:
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-m":
        if argv[i] == "-c":
            return None  # inline code is not a training program we can port
        i += 2 if argv[i] in ("-X", "-W") else 1
    if i >= len(argv):
        return None
    if argv[i] == "-m" and i + 1 < len(argv):
        module, rest = argv[i + 1], argv[i + 2:]
        if module in ("torch.distributed.run", "torch.distributed.launch"):
            return _dl_stage("torchrun", rest, _TORCHRUN, scan, stages)
        if module == "accelerate.commands.launch":
            return _dl_stage("accelerate", rest, _ACCELERATE, scan, stages)
        if module in _PYTHON_TOOLS:
            return None
        return _finish([*stages, ("python", {})], f"-m {_portable(module, scan)}", rest, scan.vars)
    return _finish([*stages, ("python", {})], _portable(argv[i], scan), argv[i + 1:], scan.vars)


def _dl_stage(name: str, argv: list[str], spec: _Spec, scan: _Scan, stages: list) -> Optional[_Launch]:
    opts, rest = _parse_options(argv, spec)
    stages = [*stages, (name, opts)]
    if not rest:
        return _finish(stages, None, [], scan.vars)
    if "module" in opts:
        return _finish(stages, f"-m {_portable(rest[0], scan)}", rest[1:], scan.vars)
    return _finish(stages, _portable(rest[0], scan), rest[1:], scan.vars)


def _finish(stages: list, entry: Optional[str], args: list[str], variables: dict) -> _Launch:
    names = {name for name, _ in stages}
    parallel = bool(names & (_MPI_LAUNCHERS | _DL_LAUNCHERS))
    runs_python = bool(names & (_DL_LAUNCHERS | {"python"})) or bool(entry and entry.endswith(".py"))
    wrapper = bool(entry and ("/" in entry or entry.endswith(".sh")))
    score = 3 if parallel and runs_python else 2 if parallel and wrapper else 1 if runs_python else 0
    return _Launch(stages, entry, args, dict(variables), score if entry else 0)


def _inner_script(text: str, scan: _Scan, stages: list, positional: list[str],
                  what: str = "bash -c command") -> Optional[_Launch]:
    """The command string of `bash -c '...'`, or a wrapper script, run with `positional` arguments
    (as written): a script of its own, seeing the outer variables."""
    if scan.depth > 5:
        return None
    variables = dict(scan.vars)
    variables.update({str(i): scan.expand(arg) for i, arg in enumerate(positional, 1)})
    variables["#"] = str(len(positional))
    inner = _Scan(variables, scan.nodes, scan.base_dir, env=scan.env, raw=dict(scan.raw),
                  modules=scan.modules, depth=scan.depth + 1, positional=positional)
    _walk_text(text, inner, f"in the {what}, ")
    scan.python_env = inner.python_env or scan.python_env
    best = _best(inner.launches)
    if best is None:
        return None
    return _finish([*stages, *best.stages], best.entry, best.args, best.variables)


def _best(launches: list[_Launch]) -> Optional[_Launch]:
    return max(launches, key=lambda launch: launch.score, default=None)  # first of the best


# ---------------------------------------------------------------------------------------------
# From the launch line to counts, framework and strategy


def _option_in_args(args: list[str], *names: str) -> Optional[str]:
    """Value of --name / --name=value among program arguments ('' for a flag without value)."""
    spellings = {f"--{n}" for n in names} | {f"--{n.replace('_', '-')}" for n in names}
    for i, arg in enumerate(args):
        option, eq, value = arg.partition("=")
        if option in spellings:
            if eq:
                return value
            following = args[i + 1] if i + 1 < len(args) else ""
            return "" if following.startswith("-") else following
    return None


def _read_config(path: Optional[str], base_dir: Optional[Path]) -> Optional[dict]:
    """A JSON or YAML config the script names, if it can be read; None otherwise (never fatal:
    the script may not even use it)."""
    if not path or base_dir is None or "$" in path:
        return None
    candidate = Path(path) if Path(path).is_absolute() else base_dir / path
    try:
        text = candidate.read_text(encoding="utf-8")
        data = json.loads(text) if candidate.suffix == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError):
        return None
    return data if isinstance(data, dict) else None


def _zero_from(value) -> Optional[str]:
    stage = str(value).strip()
    return f"zero{stage}" if stage in ("1", "2", "3") else None


def _strategy_word(value: Optional[str]) -> Optional[str]:
    """A strategy named in an argument value: fsdp, deepspeed_stage_3, zero2, ddp..."""
    if not value:
        return None
    lowered = value.lower()
    if "fsdp" in lowered or "full_shard" in lowered or "shard_grad_op" in lowered:
        return "fsdp"
    if match := re.search(r"(?:stage|zero)[_-]?([123])", lowered):
        return f"zero{match.group(1)}"
    if "ddp" in lowered:
        return "ddp"
    return None


@dataclass
class _Counts:
    nodes: Optional[int] = None
    per_node: Optional[int] = None  # processes per node that each drive a device
    world: Optional[int] = None


def _launch_counts(launch: _Launch, d: _Directives, acc_cfg: Optional[dict]) -> _Counts:
    scan = _Scan(launch.variables, d.nodes, None)

    def value(opts: dict, name: str) -> Optional[str]:
        return scan.expand(_last(opts, name))

    counts = _Counts()
    outer = next(((n, o) for n, o in launch.stages if n in _MPI_LAUNCHERS), None)
    inner = next(((n, o) for n, o in reversed(launch.stages) if n in _DL_LAUNCHERS), None)
    outer_nodes = outer_tasks = outer_ppn = None
    if outer and outer[0] == "srun":
        opts = outer[1]
        outer_nodes = _count(value(opts, "nodes"))
        outer_ppn = _count(value(opts, "ntasks_per_node"))
        outer_tasks = _count(value(opts, "ntasks"))
        step_nodes = outer_nodes or d.nodes
        if outer_tasks is None and "ntasks" not in opts:
            # without -n the step takes the allocation's layout: --ntasks-per-node, else -n, else one per node
            outer_ppn = outer_ppn or (d.ntasks_per_node if "ntasks_per_node" not in opts else None)
            if outer_ppn and step_nodes:
                outer_tasks = outer_ppn * step_nodes
            elif d.ntasks and not outer_nodes:
                outer_tasks = d.ntasks
            elif not d.spreads and "ntasks_per_node" not in opts:
                outer_tasks = step_nodes
    elif outer:
        opts = outer[1]
        outer_tasks = _count(value(opts, "np"))
        outer_ppn = _count(value(opts, "ppn"))
        if ppr := re.fullmatch(r"ppr:(\d+):node\b.*", value(opts, "map_by") or ""):
            outer_ppn = int(ppr.group(1))
        if outer_tasks is None and outer[0] == "ibrun":
            outer_tasks = d.tasks()  # ibrun starts the allocation's tasks by default
    if outer and outer_ppn is None and outer_tasks and (outer_nodes or d.nodes):
        outer_ppn = _per_node(outer_tasks, outer_nodes or d.nodes)
    if outer and outer_nodes is None and outer_tasks and outer_ppn:
        outer_nodes = _per_node(outer_tasks, outer_ppn)

    if inner is None:
        if outer and launch.entry and "python" in {n for n, _ in launch.stages}:
            counts.nodes, counts.per_node, counts.world = outer_nodes, outer_ppn, outer_tasks
        elif outer:  # a wrapper script: only the node count is known
            counts.nodes = outer_nodes
        elif launch.entry:  # plain python: one process
            counts.world = 1
        return counts

    name, opts = inner
    if name == "torchrun":
        nnodes = value(opts, "nnodes")
        if "nnodes" in opts:
            counts.nodes = _count(nnodes.split(":")[0]) if nnodes and (
                ":" not in nnodes or len(set(nnodes.split(":"))) == 1) else None
        else:
            counts.nodes = 1  # torchrun's default
        counts.per_node = _count(value(opts, "nproc_per_node"))
    elif name == "deepspeed":
        if "num_nodes" in opts:
            counts.nodes = _count(value(opts, "num_nodes"))
        elif "hostfile" not in opts and not outer:
            counts.nodes = 1  # no hostfile: DeepSpeed runs on localhost
        counts.per_node = _count(value(opts, "num_gpus"))
    else:  # accelerate
        cfg = acc_cfg or {}
        machines = value(opts, "num_machines")
        if machines is None and cfg.get("num_machines") is not None:
            machines = str(cfg["num_machines"])
        elif machines is None and "config_file" not in opts:
            machines = "1"  # accelerate's default without a config file
        processes = value(opts, "num_processes")
        if processes is None and cfg.get("num_processes") is not None:
            processes = str(cfg["num_processes"])
        counts.nodes = _count(machines)
        counts.world = _count(processes)
        counts.per_node = _per_node(counts.world, counts.nodes)
    counts.nodes = counts.nodes or outer_nodes
    return counts


def _framework(launch: Optional[_Launch], deepspeed_config: Optional[str]) -> str:
    if launch is None:
        return "pytorch"
    names = {n for n, _ in launch.stages}
    args = launch.args
    entry = (launch.entry or "").rsplit("/", 1)[-1]
    if "accelerate" in names:
        return "accelerate"
    if "deepspeed" in names or deepspeed_config or _option_in_args(args, "deepspeed") is not None:
        return "deepspeed"
    if entry.startswith("pretrain_") or _option_in_args(args, "tensor-model-parallel-size",
                                                        "pipeline-model-parallel-size") is not None:
        return "megatron"
    if "lightning" in entry.lower() or any(a.startswith("--trainer.") for a in args):
        return "lightning"
    return "pytorch"


def _deepspeed_config(launch: _Launch) -> Optional[str]:
    for name, opts in launch.stages:
        if name == "accelerate" and _last(opts, "deepspeed_config_file"):
            return _last(opts, "deepspeed_config_file")
    named = _option_in_args(launch.args, "deepspeed_config", "deepspeed_config_file")
    if named:
        return named
    value = _option_in_args(launch.args, "deepspeed")  # Hugging Face Trainer: --deepspeed ds.json
    return value if value and re.search(r"\.(json|ya?ml)$", value) else None


def _strategy(launch: Optional[_Launch], world: Optional[int], ds_path: Optional[str],
              ds_cfg: Optional[dict], acc_path: Optional[str], acc_cfg: Optional[dict]) -> Optional[str]:
    if launch is None:
        return None
    scan = _Scan(launch.variables, None, None)
    args = launch.args
    written = [_option_in_args(args, n) for n in ("tensor-model-parallel-size", "pipeline-model-parallel-size")]
    sizes = [_count(scan.expand(value)) if value is not None else 1 for value in written]
    if None in sizes:
        return None  # model-parallel sizes only known at run time
    if sizes[1] > 1:
        return "3d"
    if sizes[0] > 1:
        return "tp"
    acc = next((o for n, o in launch.stages if n == "accelerate"), None)
    if acc is not None:
        if "use_fsdp" in acc or any(k.startswith("fsdp_") for k in acc):
            return "fsdp"
        if "zero_stage" in acc:
            return _zero_from(scan.expand(_last(acc, "zero_stage")))
        if acc_cfg:
            kind = str(acc_cfg.get("distributed_type", "")).upper()
            if kind == "FSDP":
                return "fsdp"
            if kind == "DEEPSPEED":
                ds_section = acc_cfg.get("deepspeed_config") or {}
                if ds_section.get("zero_stage") is not None:
                    return _zero_from(ds_section["zero_stage"])
        elif acc_path:
            return None  # the config decides and we cannot read it
    fsdp = _option_in_args(args, "fsdp")
    if fsdp is not None:
        return "fsdp"
    for name in ("zero_stage", "zero-stage", "zero"):
        if (stage := _option_in_args(args, name)) is not None:
            return _zero_from(scan.expand(stage))
    if named := _strategy_word(scan.expand(_option_in_args(args, "strategy", "trainer.strategy"))):
        return named
    if ds_cfg is not None:
        zero = _zero_from((ds_cfg.get("zero_optimization") or {}).get("stage", 0))
        if zero:
            return zero
    elif ds_path:
        return _strategy_word(Path(ds_path).stem)  # unreadable: only its name can say, else unknown
    if world is None:
        return None
    return "single" if world == 1 else "ddp"


def _source_cluster(text: str) -> Optional[str]:
    """The profile whose signatures match the script most; None when none match or two tie."""
    scores = {}
    for name, profile in load_profiles().items():
        hits = sum(1 for pattern in profile.signatures if re.search(pattern, text, re.I))  # see ClusterProfile
        if hits:
            scores[name] = hits
    if not scores:
        return None
    ranked = sorted(scores.items(), key=lambda item: -item[1])
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def _with_missing(intent: JobIntent) -> JobIntent:
    intent = intent.with_defaults()
    missing = [name for name in REQUIRED_FOR_PORT if getattr(intent, name) is None]
    return intent.model_copy(update={"missing": missing})


def extract_script(text: str, base_dir: Optional[str | Path] = None, name: str = "script") -> JobIntent:
    """JobIntent of a batch or launch script; `name` labels errors, `base_dir` is where config
    files the script names are read from (not read when None)."""
    try:
        return _extract_script(text.replace("\r\n", "\n"), base_dir)
    except MapleError as exc:
        raise MapleError(f"{name}: {exc}", exc.exit_code) from exc


def _extract_script(text: str, base_dir: Optional[str | Path]) -> JobIntent:
    d = _parse_directives(text)
    scan = _Scan(_runtime_vars(d), d.nodes, Path(base_dir) if base_dir else None)
    _walk_text(text, scan, "")
    launch = _best(scan.launches)

    scheduler = d.scheduler
    if scheduler == "none":
        if re.search(r"\$\{?SLURM_", text) or (launch and launch.stages and launch.stages[0][0] == "srun"):
            scheduler = "slurm"
        elif re.search(r"\$\{?PBS_", text):
            scheduler = "pbs"

    configs: dict[str, str] = {}
    ds_path = _deepspeed_config(launch) if launch else None
    acc = next((o for n, o in launch.stages if n == "accelerate"), None) if launch else None
    acc_path = _last(acc, "config_file") if acc else None
    if ds_path:
        configs["deepspeed"] = ds_path
    if acc_path:
        configs["accelerate"] = acc_path
    acc_cfg = _read_config(acc_path, scan.base_dir)
    ds_cfg = _read_config(ds_path, scan.base_dir)
    if ds_cfg is None and acc_cfg and (acc_cfg.get("deepspeed_config") or {}).get("deepspeed_config_file"):
        ds_path = acc_cfg["deepspeed_config"]["deepspeed_config_file"]
        ds_cfg = _read_config(ds_path, scan.base_dir)

    counts = _launch_counts(launch, d, acc_cfg) if launch else _Counts()
    nodes = d.nodes if d.nodes_given and d.nodes else counts.nodes or d.nodes
    gpus_per_node = d.gpus_per_node or counts.per_node
    world = counts.world
    if world is None and counts.per_node and (counts.nodes or nodes) and launch and any(
            n in _DL_LAUNCHERS for n, _ in launch.stages):
        world = counts.per_node * (counts.nodes or nodes)

    env = dict(scan.env)
    if launch:
        for name, opts in launch.stages:
            if name in ("mpiexec", "mpirun"):
                for item in opts.get("env", []) + opts.get("export", []):
                    key, eq, value = item.partition("=")
                    if eq and key not in RENDEZVOUS_VARS:
                        env[key] = _portable(value, _Scan(launch.variables, d.nodes, None, raw=scan.raw))

    framework = _framework(launch, ds_path)
    intent = JobIntent(
        source_cluster=_source_cluster(text),
        scheduler=scheduler,
        launcher=_launcher(launch),
        framework=framework,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        world_size=world,
        entrypoint=launch.entry if launch else None,
        script_args=list(launch.args) if launch else [],
        walltime=d.walltime,
        account=d.account,
        queue=d.queue,
        modules=scan.modules,
        env=env,
        python_env=scan.python_env,
        configs=configs,
    ).with_defaults()
    strategy = _strategy(launch, intent.world_size, ds_path, ds_cfg, acc_path, acc_cfg)
    return _with_missing(intent.model_copy(update={"strategy": strategy}))


def _launcher(launch: Optional[_Launch]) -> str:
    """The program that starts the per-GPU workers (DESIGN.md)."""
    if launch is None:
        return "python"
    names = [n for n, _ in launch.stages]
    inner = [n for n in names if n in _DL_LAUNCHERS]
    if inner:
        return inner[-1]
    outer = [n for n in names if n in _MPI_LAUNCHERS]
    return outer[0] if outer else "python"


# ---------------------------------------------------------------------------------------------
# Requests in words

_NUMBER_WORDS = {
    "a couple of": 2, "a couple": 2, "couple of": 2, "a pair of": 2, "a dozen": 12, "dozen": 12,
    "a single": 1, "single": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16,
}
_NUMBER_RE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _NUMBER_WORDS), key=len, reverse=True)) + r")\b")
_GPU = r"(?:gpus?|gcds?|tiles?|devices|accelerators|cards|[ahv]100s|h200s|gh200s|mi250xs?)"
_HOST = r"(?:nodes?|servers?|machines?|hosts?)"
# Keywords a typo is corrected to (difflib); short words are left alone, they collide too easily.
_KEYWORDS = ("nodes", "node", "servers", "machines", "torchrun", "deepspeed", "accelerate",
             "mpiexec", "mpirun", "sharded", "fully", "stage", "hours", "minutes", "megatron",
             "lightning", "pytorch", "across", "walltime", "account", "partition", "queue")
_LAUNCHER_WORDS = {"torchrun": "torchrun", "torch.distributed.run": "torchrun", "srun": "srun",
                   "mpiexec": "mpiexec", "mpirun": "mpirun", "ibrun": "ibrun",
                   "accelerate launch": "accelerate", "deepspeed launcher": "deepspeed"}
_ARG_STOP = {"on", "with", "using", "across", "for", "and", "to", "at", "in", "of", "via", "please",
             "from", "then", "but"}


def _fix_typos(text: str, vocabulary: tuple[str, ...]) -> str:
    def fix(match):
        word = match.group(0)
        if len(word) < 5 or word in vocabulary:
            return word
        close = difflib.get_close_matches(word, vocabulary, n=1, cutoff=0.8)
        return close[0] if close else word

    return re.sub(r"[a-z]+", fix, text)


def _request_walltime(text: str) -> Optional[str]:
    if match := re.search(r"\b(?:walltime|time limit|time)\D{0,12}(\d{1,4}:\d{2}:\d{2})\b", text):
        return match.group(1)
    # no bare "d": "3d parallel" is a strategy, not three days
    match = re.search(r"(\d+(?:\.\d+)?)\s*(days?|hours?|hrs?|h|minutes?|mins?)\b", text)
    if not match:
        return None
    unit = {"d": 86400, "h": 3600, "m": 60}[match.group(2)[0]]
    try:
        return _seconds_to_walltime(round(float(match.group(1)) * unit))
    except ValueError as exc:
        raise MapleError(f"the requested time {match.group(0)!r} {exc}") from exc


def _request_entry(original: str) -> tuple[Optional[str], list[str]]:
    """The training program named in the request and the arguments written right after it."""
    match = re.search(r"(?:^|[\s`(\"'])(?:python[\d.]*\s+)?(-m\s+[\w.]+|[\w./-]+\.py)\b", original)
    if not match:
        return None, []
    entry = " ".join(match.group(1).split())
    try:
        tokens = shlex.split(original[match.end():].split("\n")[0].split("`")[0])
    except ValueError:
        tokens = original[match.end():].split()
    args: list[str] = []
    for token in tokens:
        stripped = token.rstrip(",;")
        if stripped.endswith(".") and not re.search(r"\d\.$", stripped):
            stripped = stripped[:-1]
        takes_value = args and args[-1].startswith("-") and "=" not in args[-1]
        if stripped.startswith("-") or (takes_value and stripped.lower() not in _ARG_STOP):
            args.append(stripped)
        else:
            break
        if stripped != token:
            break  # punctuation ends the command
    return entry, args


def _request_cluster(text: str) -> Optional[str]:
    """A cluster the request says the job runs on now ("from X", "currently on X", "runs on X",
    "written for X"); a cluster after "to"/"for" is where it should go, which is not ours to set."""
    for name, profile in load_profiles().items():
        spellings = {name, profile.display_name.lower(), profile.display_name.lower().split()[-1]}
        for spelling in sorted(spellings, key=len, reverse=True):
            for match in re.finditer(rf"\b{re.escape(spelling)}\b", text):
                before = text[max(0, match.start() - 60):match.start()]
                clause = re.split(r"[.;!?]|\bbut\b|\band\b", before)[-1]
                if re.search(r"\bfrom\s+(?:the\s+)?$|\bwritten\s+for\s+(?:the\s+)?$", clause):
                    return name
                if re.search(r"\b(?:on|at|of)\s+(?:the\s+)?$", clause) and re.search(
                        r"\b(?:currently|now|today|runs?|running|works?|working|existing)\b", clause):
                    return name
    return None


def extract_request(text: str) -> JobIntent:
    """JobIntent of a request in words, e.g. "train ViT with torchrun on 8 GPUs across 2 nodes"."""
    names = tuple(load_profiles())
    lowered = _fix_typos(text.lower(), _KEYWORDS + names)
    words = _NUMBER_RE.sub(lambda m: str(_NUMBER_WORDS[m.group(1)]), lowered)

    def first_int(*patterns: str) -> Optional[int]:
        for pattern in patterns:
            if match := re.search(pattern, words):
                return int(match.group(1))
        return None

    nodes = first_int(rf"(\d+)\s*(?:x\s+)?{_HOST}\b",
                      rf"\b(\d+)\s*[x×]\s*\d+\s*{_GPU}",  # "2 x 4 gpus": nodes x GPUs per node
                      r"(?:--nodes|--nnodes|\bn?nodes|--num[_-]nodes|--num[_-]machines)\s*=\s*(\d+)",
                      r"(?:--nodes|--nnodes|--num[_-]nodes|--num[_-]machines)\s+(\d+)",
                      r"(?:^|\s)-N\s*(\d+)\b")
    per_node = first_int(
        rf"(\d+)\s*(?:x\s+)?{_GPU}\s*(?:per|/|on each|in each|each|an?)\s*{_HOST}\b",
        rf"(\d+)\s*{_GPU}\s+each\b",
        rf"\d+\s*{_HOST}\s*(?:x|×|with|of)\s*(\d+)\s*{_GPU}",
        rf"(\d+)-{_GPU}\s+{_HOST}",  # "two 4-gpu nodes"
        rf"\b\d+\s*[x×]\s*(\d+)\s*{_GPU}",
        r"(?:--gpus[_-]per[_-]node|--nproc[_-]per[_-]node|\bnproc[_-]per[_-]node|--num[_-]gpus)\s*[= ]\s*(\d+)")
    total = first_int(rf"(\d+)\s*(?:total\s+)?{_GPU}(?!\s*(?:per\b|/|each\b|on each\b|in each\b|an?\s+{_HOST}))\b")
    if nodes is None and re.search(rf"\b(?:a|an)\s+{_HOST}\b", words):
        nodes = 1
    gpus_per_node = per_node or _per_node(total, nodes)
    world = total if total and not per_node else None

    launcher = next((value for key, value in _LAUNCHER_WORDS.items()
                     if re.search(rf"\b{re.escape(key)}\b", words)), None)
    zero = re.search(r"\bzero[\s_-]*(?:stage[\s_-]*)?([123])\b|\bstage[\s_-]*([123])\b", words)
    if "accelerate" in words:
        framework = "accelerate"
    elif "deepspeed" in words or zero:
        framework = "deepspeed"
    elif "megatron" in words:
        framework = "megatron"
    elif "lightning" in words:
        framework = "lightning"
    else:
        framework = "pytorch"
    if launcher is None and framework in ("deepspeed", "accelerate"):
        launcher = framework  # naming the framework is naming its launcher

    if zero:
        strategy = f"zero{zero.group(1) or zero.group(2)}"
    elif re.search(r"\bfsdp\b|fully[\s-]*sharded", words):
        strategy = "fsdp"
    elif re.search(r"\b3d\b|pipeline[\s-]*parallel", words):
        strategy = "3d"
    elif re.search(r"tensor[\s-]*parallel", words):
        strategy = "tp"
    elif re.search(r"\bddp\b|data[\s-]*parallel", words):
        strategy = "ddp"
    else:
        strategy = None

    entry, args = _request_entry(text)
    account = re.search(r"\b(?:account|allocation|project)\s*(?:is\s+|:|=)?\s*([\w-]*\d[\w-]*)", words)
    queue = re.search(r"\b(?:queue|qos|partition)\s*(?:is\s+|:|=)?\s*([a-z][\w-]*)", words)
    if queue and queue.group(1) in ("the", "a", "and", "with", "for", "on"):
        queue = None
    queue = queue or re.search(r"\b(?!the\b|a\b|any\b|which\b)([a-z][\w-]*)\s+(?:queue|qos|partition)\b", words)
    scheduler = ("slurm" if re.search(r"\bslurm\b|\bsbatch\b", words)
                 else "pbs" if re.search(r"\bpbs\b|\bqsub\b", words) else "none")

    intent = JobIntent(
        source_cluster=_request_cluster(words),
        scheduler=scheduler,
        launcher=launcher or "python",
        framework=framework,
        strategy=strategy,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        world_size=world,
        entrypoint=entry,
        script_args=args,
        walltime=_request_walltime(words),
        account=account.group(1) if account else None,
        queue=queue.group(1) if queue else None,
    ).with_defaults()
    if intent.strategy is None and intent.world_size:
        intent = intent.model_copy(update={"strategy": "single" if intent.world_size == 1 else "ddp"})
    return _with_missing(intent)
