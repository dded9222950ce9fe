"""SkyPilot task YAML in and out (issue 29). A SkyPilot task (0.12+) runs one YAML on clouds,
Kubernetes and existing Slurm clusters: `num_nodes` nodes, `resources.accelerators` per node,
`setup` then `run` on each node, with SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS, SKYPILOT_NUM_NODES and
SKYPILOT_NUM_GPUS_PER_NODE set. It is no batch scheduler (no directives, walltime or account), so it
is not a unit of schedulers/: a task is read as a script (`script_view`, which extraction and the
trace read like any other), and `--to skypilot` writes a task from a JobIntent (`write_task`).

Sources (read 2026-11-29):
- Task YAML: https://docs.skypilot.co/en/latest/reference/yaml-spec.html
  (github.com/skypilot-org/skypilot docs/source/reference/yaml-spec.rst); its JSON schema is
  sky/utils/schemas.py get_task_schema() (skypilot 0.14.1 from PyPI: name, workdir, num_nodes,
  resources, envs, secrets, file_mounts, setup, run, ...; no other top-level key allowed)
- The variables of `run`: https://docs.skypilot.co/en/stable/running-jobs/environment-variables.html
  and distributed-jobs.html (the torchrun example: --nnodes=$SKYPILOT_NUM_NODES
  --nproc_per_node=$SKYPILOT_NUM_GPUS_PER_NODE --node_rank=$SKYPILOT_NODE_RANK, the head node's
  address the first line of $SKYPILOT_NODE_IPS)
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from typing import Optional

import yaml

from .errors import MapleError

TARGET = "skypilot"  # `--to skypilot`: a task file, not a cluster profile
SUFFIX = "sky.yaml"
# the task schema's top-level keys (sky/utils/schemas.py get_task_schema, skypilot 0.14.1)
TASK_KEYS = frozenset({"name", "workdir", "num_nodes", "resources", "envs", "secrets", "file_mounts", "setup", "run",
                       "inputs", "outputs", "service", "config", "volumes", "volume_mounts", "pool", "event_callback",
                       "file_mounts_mapping", "managed_secrets", "api_server_access", "_metadata"})
_ACCELERATOR = re.compile(r"([A-Za-z0-9][\w.-]*)(?::(\d+))?")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MODULE = re.compile(r"[A-Za-z0-9_.+@/-]+")  # pytorch/2.8.0, PrgEnv-gnu, cray-mpich@8.1
_ACTIVATE = re.compile(r"(?:source|\.)\s+(?P<venv>\S+?)/bin/activate|(?:conda|mamba|micromamba) activate\s+(?P<conda>\S+)")
# The head node: SkyPilot lists the nodes' addresses one a line, the head first (distributed-jobs.html).
_HEAD = 'MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)'
# GPU names as SkyPilot's catalogue spells them (`sky show-gpus`), matched in a profile's gpu_model.
_SKY_GPUS = ("GH200", "H200", "H100", "A100-80GB", "A100", "L40S", "L4", "V100", "MI300X", "MI250X", "MI250")


def is_task(text: str, name: str = "") -> bool:
    """Whether a text is a SkyPilot task: a YAML mapping with `run` and only the schema's keys (and,
    where a file `name` is given, a .yaml or .yml file)."""
    if name and not name.endswith((".yaml", ".yml")) or text.startswith("#!"):
        return False
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and "run" in data and set(data) <= TASK_KEYS


def accelerators(resources) -> tuple[Optional[str], Optional[int]]:
    """(GPU name, count per node) of `resources.accelerators`: "A100:8", {A100: 8}, or a list of
    alternatives (the first is read; each must give the same count)."""
    value = (resources or {}).get("accelerators") if isinstance(resources, dict) else None
    if value is None:
        return None, None
    if isinstance(value, dict):
        value = [f"{k}:{v}" for k, v in value.items()]
    options = value if isinstance(value, list) else [value]
    read = [_ACCELERATOR.fullmatch(str(option).strip()) for option in options]
    if not read or not all(read):
        raise MapleError(f"resources.accelerators {value!r} is not NAME:COUNT (A100:8)")
    counts = {int(m[2] or 1) for m in read}
    if len(counts) != 1:
        raise MapleError(f"resources.accelerators {value!r} gives different GPU counts; maple needs one")
    return read[0][1], counts.pop()


def read_task(text: str) -> dict:
    """The task, checked for what a port needs: `run`, a positive `num_nodes`, string `setup`."""
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or not isinstance(data.get("run"), str):
        raise MapleError("a SkyPilot task needs `run` as a block of commands")
    nodes = data.get("num_nodes", 1)
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
        raise MapleError(f"num_nodes {nodes!r} is not a positive whole number")
    if not isinstance(data.get("setup", ""), str):
        raise MapleError("`setup` is not a block of commands")
    envs = data.get("envs") or {}
    if not isinstance(envs, dict) or not all(_ENV_NAME.fullmatch(str(k)) for k in envs):
        raise MapleError("`envs` is not a mapping of variable names to values")
    return data


def script_view(text: str, name: str) -> str:
    """The task as bash reads it on one node: its envs, the counts its shape fixes, `setup` in a
    subshell (SkyPilot runs it apart from `run`), then `run`. Extraction reads this like a batch
    script; the trace runs `run` on each node of an emulated allocation (trace/skypilot.py)."""
    data = read_task(text)
    gpus = accelerators(data.get("resources"))[1]
    lines = ["#!/bin/bash", f"# the SkyPilot task {shlex.quote(str(data.get('name') or name))} as maple reads it: "
             "setup, then run, on each node"]
    lines += [f"export {k}={shlex.quote('' if v is None else str(v))}" for k, v in (data.get("envs") or {}).items()]
    lines.append(f"export SKYPILOT_NUM_NODES={data.get('num_nodes', 1)}")
    if gpus:
        lines.append(f"export SKYPILOT_NUM_GPUS_PER_NODE={gpus}")
    if data.get("setup", "").strip():
        lines += ["(", data["setup"].rstrip("\n"), ")"]
    return "\n".join([*lines, data["run"].rstrip("\n")]) + "\n"


def sky_gpu(gpu_model: Optional[str]) -> Optional[str]:
    """A cluster's GPU model (A100-SXM4-80GB) as SkyPilot names it (A100-80GB); None if unknown."""
    model = (gpu_model or "").upper()
    for name in _SKY_GPUS:
        base, _, size = name.partition("-")
        if re.search(rf"(?<![A-Z0-9]){base}(?![0-9])", model) and (not size or size in model):
            return name
    return None


def _plain_path(path: str, check) -> bool:
    try:
        return bool(check(path))
    except MapleError:
        return False


def _environment(intent) -> tuple[list[str], list[str]]:
    """(the source's environment as commands, notes): its modules and its Python environment's
    activation, each rebuilt from an allowlisted name or path (never the script's line as written)."""
    from .python_env import activation, check_env_path

    modules = [m for m in intent.modules if _MODULE.fullmatch(m)]
    lines = [f"module load {shlex.join(modules)}"] if modules else []
    notes = [f"the source's module {m!r} is not carried over: not a plain module name" for m in intent.modules
             if m not in modules]
    if modules:
        notes.append(f"setup loads the source cluster's modules ({', '.join(modules)}); a node without that module "
                     "system (a cloud VM, Kubernetes) needs your own install there instead")
    found = _ACTIVATE.fullmatch((intent.python_env or "").strip())
    if found and _plain_path(found["venv"] or found["conda"], check_env_path):
        lines.append(activation("conda" if found["conda"] else "venv", found["venv"] or found["conda"]))
    elif intent.python_env:
        notes.append(f"the source's Python environment ({intent.python_env}) is not carried over: not a plain "
                     "venv or conda activation")
    return lines, notes


def _envs(intent, gpu_name: str) -> tuple[dict, list[str]]:
    """(the source's variables the task carries, notes on those it does not), by the values table
    (values.py): a SkyPilot node has no site of its own, and no fixed core count to compute a
    per-rank thread count from (OMP_NUM_THREADS keeps the source's number)."""
    from .values import Target, env_rule, port_env

    vendor = "amd" if gpu_name.startswith("MI") else "nvidia"
    per_core = {name for name in intent.env if (rule := env_rule(name)) and rule.to == "cores_per_rank"}
    kept, notes = port_env({k: v for k, v in intent.env.items() if k not in per_core},
                           Target(TARGET, vendor, same_cluster=False, cores_per_rank=1), set())
    # the source's own per-rank thread count, kept: a SkyPilot node's cores are only known once provisioned
    kept |= {name: intent.env[name] for name in sorted(per_core) if intent.env[name].isdigit()}
    notes += [f"{name}={intent.env[name]} is the source's; check it against the cores SkyPilot gives each node"
              if name in kept else f"{name} is not carried over: its value is not a number" for name in sorted(per_core)]
    return kept, notes


def _launch(intent) -> str:
    """One node's launch: the source's program under torchrun, one worker per GPU on each node
    (the same ranks per node and world as the source), or the program alone on one device."""
    from .shell_words import shell_word  # the arguments' $VAR expansions stay expansions, nothing else runs

    program = " ".join(shell_word(word) for word in [intent.entrypoint, *intent.script_args])
    runner = "python" if intent.entrypoint.endswith(".py") else ""
    if intent.launcher == "python" and (intent.processes() or 1) == 1:
        return f"{runner} {program}".strip()
    if intent.launcher != "torchrun":
        raise MapleError(f"the source starts its ranks with {intent.launcher}; a SkyPilot task is written for "
                         "torchrun and single-process sources only (its nodes have no MPI launcher of SkyPilot's)")
    program = program if runner else f"--no-python {program}"
    return ("torchrun --nnodes=\"$SKYPILOT_NUM_NODES\" --nproc_per_node=\"$SKYPILOT_NUM_GPUS_PER_NODE\" "
            "--node_rank=\"$SKYPILOT_NODE_RANK\" --master_addr=\"$MASTER_ADDR\" --master_port=8008 " + program)


def _variables_read(intent) -> set[str]:
    """The variables the program's path and arguments expand ($SCRATCH, ${SLURM_PROCID})."""
    words = [intent.entrypoint, *intent.script_args]
    return {name for word in words for name in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", word)}


def write_task(intent, gpu_name: Optional[str], name: str) -> str:
    """A SkyPilot task that runs the intent's program, arguments and process model; `setup` is the
    source's environment, and `run` sets it again (SkyPilot runs the two in separate shells)."""
    if not intent.entrypoint:
        raise MapleError("the source names no program; give it with --entrypoint")
    if not intent.nodes or not intent.gpus_per_node:
        raise MapleError("a SkyPilot task needs the job's size: give --nodes and --gpus-per-node")
    if not gpu_name:
        raise MapleError("the source's GPU has no SkyPilot name maple knows (its cluster is not recognised, or its GPU "
                         "is not in SkyPilot's catalogue); a task asks for NAME:COUNT, such as A100:8")
    from . import schedulers
    from .shell_words import shell_word

    read = _variables_read(intent)
    held = sorted(name for name in read if schedulers.by_variable(name))
    if held:
        raise MapleError(f"the program reads {', '.join(held)}, which a SkyPilot node does not set; give its value "
                         "with --program-args")
    (environment, env_notes), (envs, notes) = _environment(intent), _envs(intent, gpu_name)
    notes += env_notes
    # SkyPilot exports `envs` as written; a value that expands a variable (${USER}) is exported in the
    # shells instead, where it expands as in the source
    expanded = {k: v for k, v in envs.items() if "$" in v}
    envs = {k: v for k, v in envs.items() if k not in expanded}
    environment += [f"export {k}={shell_word(v)}" for k, v in expanded.items()]
    if intent.container and intent.container.image:  # SkyPilot's image_id takes docker images, not .sif files
        notes.append(f"the source runs its program in the {intent.container.runtime} image {intent.container.image}, "
                     "which the task does not: give a Docker image as resources.image_id (docker:IMAGE) to run it there")
    unset = sorted(name for name in read - set(envs) if not name.startswith("SKYPILOT_"))
    if unset:  # a site's $SCRATCH: set on the source's cluster, not on a SkyPilot node
        notes.append(f"the program's arguments read {', '.join('$' + n for n in unset)}, which a SkyPilot node "
                     "does not set: give each a value under envs")
    task = {"name": name, "num_nodes": intent.nodes, "resources": {"accelerators": f"{gpu_name}:{intent.gpus_per_node}"}}
    if envs:
        task["envs"] = envs
    if environment:
        task["setup"] = "\n".join(environment) + "\n"
    head = [_HEAD] if intent.nodes > 1 or intent.launcher == "torchrun" else []
    task["run"] = "\n".join([*environment, *head, _launch(intent)]) + "\n"
    header = [f"# SkyPilot task written by maple-ci from {name}", *(f"# note: {note}" for note in notes)]
    return "\n".join(re.sub(r"[\x00-\x1f\x7f]", "?", line) for line in header) + "\n" + yaml.dump(
        task, Dumper=_TaskDumper, sort_keys=False, default_flow_style=False)


class _TaskDumper(yaml.SafeDumper):
    """Commands as YAML block literals (`run: |`), as SkyPilot's own examples write them."""


_TaskDumper.add_representer(str, lambda dumper, value: dumper.represent_scalar(
    "tag:yaml.org,2002:str", value, style="|" if "\n" in value else None))


# SkyPilot's own parser, run by an interpreter that has skypilot (often a virtualenv of its own: it
# is a 460 MB install with its API server's dependencies); the task comes on stdin.
_VALIDATE = ("import sys, yaml, sky\n"
             "try:\n    sky.Task.from_yaml_config(yaml.safe_load(sys.stdin.read()))\n"
             "except Exception as exc:\n    sys.exit(f'{type(exc).__name__}: {exc}')\n")
VALIDATE_SECONDS = 120


def skypilot_python() -> Optional[str]:
    """$MAPLE_SKYPILOT_PYTHON, else this Python where skypilot is installed in it, else None."""
    return os.environ.get("MAPLE_SKYPILOT_PYTHON") or (sys.executable if importlib.util.find_spec("sky") else None)


def schema_checks(text: str) -> list:
    """The task against SkyPilot's own validation (sky.Task.from_yaml_config: its JSON schema, then
    its own checks of num_nodes, resources and envs); a warning that it was not checked where no
    interpreter with skypilot is known."""
    from .verify.static import Check

    python = skypilot_python()
    if not python:
        return [Check(name="skypilot-schema", ok=False, severity="warning",
                      message="skypilot is not installed here: the task was not checked with SkyPilot's own "
                              "validation (pip install 'skypilot>=0.12', or set MAPLE_SKYPILOT_PYTHON to a "
                              "Python that has it)")]
    try:
        run = subprocess.run([python, "-c", _VALIDATE], input=text, capture_output=True, text=True,
                             timeout=VALIDATE_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [Check(name="skypilot-schema", ok=False, message=f"SkyPilot's validation did not run ({python}): {exc}")]
    if run.returncode:
        reason = (run.stderr.strip().splitlines() or [f"exit {run.returncode}"])[-1]
        return [Check(name="skypilot-schema", ok=False, message=f"SkyPilot refuses the task: {reason}")]
    return [Check(name="skypilot-schema", ok=True, message="sky.Task.from_yaml_config accepts the task")]
