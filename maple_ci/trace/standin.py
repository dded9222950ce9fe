"""The stand-in behind every command the trace intercepts: launchers, interpreters, the scheduler's
and the machine's commands. It runs INSIDE the sandbox, under the plain interpreter (stdlib only,
`python -I -S`), once per intercepted call: `standin.py NAME ARGS...`.

It records what was asked (one JSON line per event in $MAPLE_TRACE_HOME/out/events.jsonl) and
behaves as the real command would for the script's control flow, without running any program:
- a launcher expands its ranks by the launcher registry's grammar (the same data extraction reads)
  and runs its command once per traced rank with the variables the real launcher sets;
- `python train.py` (and any command the sandbox has no such program for) is the program: recorded
  with its argv, cwd, node and environment, never run;
- `scontrol show hostnames`, `hostname`, `nvidia-smi -L`, `flux hostlist` answer from the allocation.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HOME = Path(os.environ["MAPLE_TRACE_HOME"])
sys.path.insert(0, str(HOME))
from launch_options import Spec, last, parse_options, python_command  # noqa: E402  (bound in from maple_ci/launchers)
import runners  # noqa: E402  (maple_ci/trace/runners.py)
import answers  # noqa: E402  (maple_ci/trace/answers.py)
import ranks  # noqa: E402  (maple_ci/trace/ranks.py)
from placement import ALLOC, dl_shape, gpus, job_nodes, node, placement  # noqa: E402  (maple_ci/trace/placement.py)

GRAMMARS = json.loads((HOME / "grammars.json").read_text())
MAX_DEPTH = 8


def record(event: str, argv: list, **extra) -> None:
    line = {"event": event, "argv": argv, "cwd": os.getcwd(), "node": node(), **extra}
    with open(HOME / "out" / "events.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def spec(name: str) -> Spec:
    g = GRAMMARS[name]
    return Spec(aliases=g["aliases"], flags=frozenset(g["flags"]), values=frozenset(g["values"]),
                pairs=frozenset(g["pairs"]), value_default=g["value_default"], env_name_value=g["env_name_value"],
                subcommands=frozenset(g["subcommands"]),
                options_are_never_values=bool((g["trace"] or {}).get("argparse")))


def run(argv: list, env: dict) -> int:
    depth = int(env.get("MAPLE_TRACE_DEPTH", "0")) + 1
    if depth > MAX_DEPTH:
        record("refused", argv, reason="launches nested deeper than the trace follows")
        return 0
    env = {**env, "MAPLE_TRACE_DEPTH": str(depth)}
    import subprocess  # here, not above: most calls are a program's, which runs nothing (30 ms less each)

    try:
        return subprocess.run(argv, env=env).returncode
    except PermissionError:
        if runners.shell_script(argv[0]):  # a checkout's wrapper that lost its execute bit: bash reads it as the job would
            return subprocess.run(["bash", *argv], env=env).returncode
    except OSError:
        pass
    # a path-named command the sandbox does not have (a site's wrapper, an interpreter by path), with
    # the variables its launcher gave this rank
    return launched_program(argv[0], argv[1:], env)


def launched_program(name: str, argv: list, env: dict | None = None) -> int:
    """A command the sandbox has no program for, inside a launch. When it hands an interpreter or a
    Python file on (a site's affinity wrapper: `task_affinity python3 train.py`), that is the
    program and the wrapper is recorded; otherwise the command itself is the program."""
    env = dict(os.environ) if env is None else env
    start = next((i for i, word in enumerate(argv) if os.path.basename(word).startswith("python") or word.endswith(".py")), None)
    if start is None or os.path.basename(name).startswith("python"):
        record("program", [name, *argv], env=env)
        return 0
    record("wrapper", [name, *argv[:start]])
    return run(argv[start:] if not argv[start].endswith(".py") else ["python", *argv[start:]], env)


# --- launchers -----------------------------------------------------------------------------------

def mpi_launch(name: str, argv: list) -> int:
    opts, command = parse_options(argv, spec(name))
    opts = ranks.inherited(GRAMMARS[name], opts, os.environ)
    if not command:
        record("launch", [name, *argv], launcher=name, note="starts no program")
        return 0
    nodes, per_node, world = placement(GRAMMARS[name], opts)
    command = in_working_directory(GRAMMARS[name], command)
    record("launch", [name, *argv], launcher=name, ranks=world, per_node=per_node, nodes=nodes, command=command,
           gpus_per_node=ranks.set_devices_per_node(GRAMMARS[name], opts, per_node))
    status = 0
    for rank in ranks.traced(world, per_node):
        index = min(rank // per_node, len(nodes) - 1)
        env = {**os.environ, **ranks.rank_env(GRAMMARS[name], rank, rank % per_node, per_node, world, index),
               "MAPLE_TRACE_NODE": nodes[index], "MAPLE_TRACE_VIA": via(name),
               **ranks.bound_devices(GRAMMARS[name], opts, rank % per_node, len(nodes), per_node)}
        env.update(ranks.set_devices(GRAMMARS[name], opts, rank % per_node))
        status = max(status, run(command, env))
    return status


def in_working_directory(g: dict, command: list) -> list:
    """srun(1) "Executable": a bare name found neither by path nor on PATH is run from the working
    directory (`srun fairseq_fsdp.sh`), where the launcher's trace block says it searches there."""
    import shutil

    name = command[0]
    if g["trace"].get("search_cwd") and "/" not in name and not shutil.which(name) and os.path.isfile(name):
        return [f"./{name}", *command[1:]]
    return command


def via(name: str) -> str:
    return ",".join(filter(None, [os.environ.get("MAPLE_TRACE_VIA", ""), name]))


# --- per-node launchers that fork the workers (torchrun, deepspeed, accelerate) ----------------

def dl_launch(name: str, argv: list) -> int:
    g = GRAMMARS[name]
    opts, command = parse_options(argv, spec(name))
    if not command:
        record("launch", [name, *argv], launcher=name, note="starts no program")
        return 0
    # a flag (--use_fsdp) reads as "true", as accelerate writes it into the workers' variables
    settings = {**ranks.config_settings(opts), **{k: v[-1] or "true" for k, v in opts.items() if v}}
    per_node, nodes, node_rank = dl_shape(g, settings)
    world = per_node * nodes
    record("launch", [name, *argv], launcher=name, ranks=world, per_node=per_node, nodes=[node()], command=command)
    master = settings.get("master_addr") or ranks.rendezvous_host(settings) or ALLOC["nodes"][0]
    variables = {**g["behaviour"], **g["trace"].get("mode_env", {})}
    extra_env = {**{var: str(settings[option]) for option, var in variables.items() if option in settings},
                 **ranks.listed_devices(g, settings)}
    status = 0
    for local in range(min(per_node, ranks.MAX_RANKS)):
        rank = node_rank * per_node + local
        env = {**os.environ, **ranks.rank_env(g, rank, local, per_node, world, node_rank), **extra_env,
               "MASTER_ADDR": master, "MASTER_PORT": str(settings.get("master_port", 29500)),
               "MAPLE_TRACE_VIA": via(name)}
        words = ranks.worker_command(name, opts, command)
        if g["trace"].get("local_rank_argument") and "no_local_rank" not in opts:
            words = [*words, f"--local_rank={local}"]
        status = max(status, run(words, env))
    return status


def console_launch(name: str, argv: list) -> int:
    """A console script that starts the workers as another launcher does (`colossalai run`: torchrun
    on this node): its own options (and `env_options` variables) renamed to that launcher's; where
    only a variable (`when_env`) or more visible devices than one (`when_devices`) make it launch, without
    them the console script is the program."""
    t = GRAMMARS[name]["trace"]
    if t.get("subcommand") and argv[:1] != [t["subcommand"]]:
        return not_run(name, argv)
    forced = os.environ.get(t.get("when_env", ""), "").lower() in ("1", "true")
    many = t.get("when_devices") and ranks.visible_devices(os.environ, gpus()) >= t["when_devices"]
    if t.get("when_env") and not (forced or many):
        record("program", [name, *argv], env=dict(os.environ))  # it trains in its own process
        return 0
    opts, command = parse_options(argv[1:] if t.get("subcommand") else argv, spec(name))
    given = {option: os.environ[var] for var, option in t.get("env_options", {}).items() if os.environ.get(var)}
    words = ["--module"] * bool(t.get("module"))
    for option, values in {**t.get("option_defaults", {}), **given, **opts}.items():
        for value in values if isinstance(values, list) else [values]:
            words += [f"--{t.get('options', {}).get(option, option)}", *([str(value)] if value != "" else [])]
    return dl_launch(t["as"], [*words, "--", *filter(None, [t.get("module")]), *command])


# --- the program and the machine's commands --------------------------------------------------------

def python(name: str, argv: list) -> int:
    _, rest = python_command(argv)
    if rest[:1] == ["-m"] and len(rest) > 1 and rest[1] in MODULE_LAUNCHERS:
        return dispatch(MODULE_LAUNCHERS[rest[1]], rest[2:])
    if rest[:1] == ["-c"]:
        return python_code(name, rest)
    file = os.path.basename(rest[0]) if rest else ""
    if file.endswith(".py") and GRAMMARS.get(file, {}).get("kind") == "console":  # a launcher written in Python (deepy.py)
        return dispatch(file, rest[1:])
    record("program", [name, *argv], env=dict(os.environ))
    return 0


def python_code(name: str, rest: list) -> int:
    """`python -c CODE`: the device-count idioms answer from the allocation; other code is not run."""
    code = rest[1] if len(rest) > 1 else ""
    if "device_count" in code:
        print(ranks.visible_devices(os.environ, gpus()))
    else:
        record("not_run", [name, *rest], reason="python -c code is not run by the trace")
    return 0


def machine(name: str, argv: list) -> int:
    """The machine's own commands, answered from the allocation (answers.py); other queries recorded."""
    here = {"node": node(), "nodes": job_nodes(), "alloc_nodes": ALLOC["nodes"], "gpus": gpus(),
            "cpus": ALLOC["cpus_per_node"], "addresses": ALLOC["addresses"],
            "listed": os.environ.get("SLURM_JOB_NODELIST", "")}
    text = answers.answer(name, argv, here)
    if text is None:
        record("not_run", [name, *argv], reason="a query of the scheduler or the devices")
    else:
        print(text)
    return 0


def remote(name: str, argv: list) -> int:
    """ssh HOST CMD / pdsh -w HOSTS CMD: the command runs on each named node."""
    opts, rest = parse_options(argv, spec(name))
    hosts = [h for w in opts.get("w", []) for h in w.split(",")] or rest[:1]
    command = rest if opts.get("w") else rest[1:]
    t = GRAMMARS[name]["trace"] or {}
    if t.get("node_index_option"):  # pbsdsh: the job's own nodes, or the one holding an index of its list
        entries = int(ALLOC["cpus_per_node"]) if t.get("index_entries_per_node") == "cpus" else 1
        hosts, command = ranks.indexed(job_nodes(), last(opts, t["node_index_option"]), entries), rest[rest[:1] == ["--"]:]
    record("launch", [name, *argv], launcher=name, nodes=hosts, command=command)
    status = 0
    for host in hosts[:ranks.MAX_RANKS]:
        env = {**os.environ, "MAPLE_TRACE_NODE": host, "MAPLE_TRACE_VIA": via(name)}
        if command:
            status = max(status, run(["bash", "-c", " ".join(command)], env))
    return status


def skypilot_nodes(argv: list) -> int:
    """A SkyPilot task's `run` (on standard input; trace/skypilot.py) on each node, with the node's
    rank as SkyPilot sets it (the job's environment has the rest: SKYPILOT_NODE_IPS, ...)."""
    commands = sys.stdin.read()
    nodes = job_nodes()
    record("launch", ["skypilot-nodes", *argv], launcher="skypilot", nodes=nodes, command=["run"])
    status = 0
    for rank, host in enumerate(nodes[:ranks.MAX_RANKS]):
        env = {**os.environ, "MAPLE_TRACE_NODE": host, "SKYPILOT_NODE_RANK": str(rank)}
        status = max(status, run(["bash", "-c", commands], env))
    return status


def flux(argv: list) -> int:
    if argv[:1] in (["run"], ["submit"]):
        return mpi_launch("flux", argv)
    return machine("flux", argv)


def submit(name: str, argv: list) -> int:
    """sbatch/qsub of another script of the checkout: that script is traced as the job it submits,
    with the variables the submit line exports (sbatch --export=ALL,A=1; qsub -v A=1,B=2)."""
    grammar = SUBMIT_GRAMMARS.get(name)
    opts, rest = parse_options(argv, spec(grammar)) if grammar else ({}, [])
    record("submit", [name, *argv])
    print("Submitted batch job 424243" if name == "sbatch" else "424243.trace")
    wrapped = last(opts, SUBMIT_WRAP[name]) if name in SUBMIT_WRAP and not rest else None
    if not wrapped and (not rest or not os.path.isfile(rest[0])):
        return 0
    exported = [item for value in opts.get("export", []) + opts.get("v", []) for item in value.split(",") if "=" in item]
    env = {k: v for k, v in os.environ.items() if k != "MAPLE_TRACE_VIA"}
    env.update(item.split("=", 1) for item in exported)
    return run(["sh", "-c", wrapped] if wrapped else ["bash", *rest], env)


SUBMIT_GRAMMARS = {"sbatch": "srun", "qsub": "qsub"}
SUBMIT_WRAP = {"sbatch": "wrap"}  # sbatch(1) --wrap: the job is that string under sh (schedulers/slurm.py, command_option)


MODULE_LAUNCHERS = {"torch.distributed.run": "torchrun", "torch.distributed.launch": "torchrun",
                    "torchrun_jsc": "torchrun", "deepspeed.launcher.runner": "deepspeed",
                    "accelerate.commands.launch": "accelerate"}


def dispatch(name: str, argv: list) -> int:
    name = ALIASES.get(name, name)
    kind = GRAMMARS.get(name, {}).get("kind")
    if kind == "mpi":
        return flux(argv) if name == "flux" else mpi_launch(name, argv)
    if kind == "dl":
        if name == "accelerate" and argv[:1] == ["launch"]:
            argv = argv[1:]
        return dl_launch(name, argv)
    if kind == "remote":
        return remote(name, argv)
    if kind == "console" and (GRAMMARS[name]["trace"] or {}).get("as"):
        return console_launch(name, argv)
    if kind == "submit" or name in ("sbatch", "bsub"):
        return submit(name, argv)
    if name in runners.WRAPPER_VALUES:
        return wrapper(name, argv)
    if name in runners.RUNNER_VALUES:
        return runner(name, argv)
    if name in ("apptainer", "singularity"):
        return container(name, argv)
    handler = COMMANDS.get(name)
    if handler:
        return handler(argv)
    if name.startswith("python"):
        return python(name, argv)
    if os.environ.get("MAPLE_TRACE_VIA"):
        return launched_program(name, argv)
    record("not_run", [name, *argv])
    return 0


def not_run(name: str, argv: list) -> int:
    record("not_run", [name, *argv])
    return 0


def wrapper(name: str, argv: list) -> int:
    command = runners.wrapped(name, argv)
    return run(command, dict(os.environ)) if command else 0


def container(name: str, argv: list) -> int:
    found = runners.in_container(argv)
    if found is None:
        record("not_run", [name, *argv], reason="container command")
        return 0
    image, command = found
    record("container", [name, *argv], image=image)
    return run(command, dict(os.environ)) if command else 0


def runner(name: str, argv: list) -> int:
    found = runners.run_by(name, argv)
    if found is None:
        return not_run(name, argv)
    image, command = found
    if image:
        record("container", [name, *argv], image=image)
    return run(command, dict(os.environ)) if command else 0


COMMANDS = {"module": lambda argv: not_run("module", argv), "cd": lambda argv: not_run("cd", argv), "ml": lambda argv: not_run("ml", argv),
            "source": lambda argv: not_run("source", argv), "flux": flux, "skypilot-nodes": skypilot_nodes, "sleep": lambda argv: 0,
            **{name: (lambda argv, name=name: machine(name, argv)) for name in ("scontrol", "hostname", "nvidia-smi", "rocm-smi", "nproc")}}
ALIASES = {"torchrun_jsc": "torchrun", "mpiexec.hydra": "mpiexec"}


if __name__ == "__main__":
    sys.exit(dispatch(os.path.basename(sys.argv[1]), sys.argv[2:]))
