"""Console scripts that are launchers, and remote shells that start one per node.

`colossalai run`, `tune run`, `torchrun_jsc` and `composer` start the per-device workers the way
torchrun does (torchrun's options or its variables), so they are read as a torchrun stage on the
program they run; `llamafactory-cli train CFG` with FORCE_TORCHRUN runs torchrun on its own module;
IDRIS's `idr_accelerate` is `accelerate launch`; `ray job submit -- CMD` runs CMD as the driver on the job's Ray cluster. `ssh HOST CMD` and `pdsh -w HOSTS CMD` run a command
string on each node: it is read as a script of its own; `pbsdsh SCRIPT ARGS` runs a program on each. Their option grammars are the registry's
(maple_ci/launchers/grammars.yaml).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Optional

from ..data_cache import load_yaml
from .evaluate import DEVICES
from ..errors import MapleError
from ..paths import bundled
from ..launchers import grammar, last, parse_options

if TYPE_CHECKING:
    from .launch import Launch, _Context
    from .walk import Shell

CONSOLES = {"colossalai", "composer", "tune", "torchrun_jsc", "llamafactory-cli", "idr_accelerate", "ray"}
REMOTE = {"ssh", "pdsh", "pbsdsh"}
# llamafactory-cli's torchrun options come from its environment (LLaMA-Factory's cli.py)
_LLAMAFACTORY_ENV = {"NNODES": "nnodes", "NODE_RANK": "node_rank", "NPROC_PER_NODE": "nproc_per_node",
                     "MASTER_ADDR": "master_addr", "MASTER_PORT": "master_port"}


def remote(head: str, argv: list[str], shell: "Shell", stages: list, ctx: "_Context") -> Optional["Launch"]:
    """`ssh [opts] HOST CMD...` / `pdsh [opts] CMD...`: the command string read as a script;
    `pbsdsh [opts] PROGRAM ARGS...`: the program, run on each node (or chunk) of the job."""
    from .launch import _program, inner

    _, rest = parse_options(argv[1:], grammar(head))
    if head == "pbsdsh":
        return _program(rest, shell, stages, ctx) if rest else None
    # a host only the job knows (`${nodes[$i]}`) may expand to nothing: a host has no spaces, a command does
    command = rest[1:] if head == "ssh" and not (len(rest) == 1 and " " in rest[0]) else rest
    # the remote shell gets no arguments: a "$@" in its command is the job's, put there by this one
    return inner(" ".join(command), shell, stages, [], ctx, arguments_known=shell.arguments_known) if command else None


@lru_cache(maxsize=1)
def _site_wrappers() -> dict:
    return load_yaml(bundled("templates") / "site_wrappers.yaml") or {}


def site_wrapper(program: str) -> Optional[str]:
    """What a center's wrapper on PATH runs (templates/site_wrappers.yaml), as bash; None for others."""
    entry = _site_wrappers().get(program) if "/" not in program else None
    return entry["runs"] if entry else None


def console(head: str, argv: list[str], shell: "Shell", stages: list, ctx: "_Context") -> Optional["Launch"]:
    """A console-script launcher, as the torchrun or accelerate stage it amounts to; None when it
    is used as a plain program (`llamafactory-cli train` on one device)."""
    return _READERS[head](argv, shell, stages, ctx)


def _torchrun_like(argv: list[str], shell: "Shell", stages: list, ctx: "_Context") -> Optional["Launch"]:
    from .launch import _dl_stage
    from .options import TORCHRUN

    return _dl_stage("torchrun", argv, TORCHRUN, shell, stages, ctx)


def _colossalai(argv, shell, stages, ctx):
    if argv[1:2] != ["run"]:
        return None
    return _torchrun_like(argv[2:], shell, stages, ctx)


def _tune(argv, shell, stages, ctx):
    if argv[1:2] != ["run"]:
        return None
    opts, rest = parse_options(argv[2:], grammar("tune"))
    if rest and not rest[0].endswith(".py"):
        config = last(parse_options(rest[1:], grammar("tune"))[0], "config") or "CONFIG.yaml"
        raise MapleError(
            f"`tune run {rest[0]}` runs a torchtune built-in recipe, which is not in the checkout; copy it "
            f"in (`tune cp {rest[0]} recipes/` and `tune cp {config} configs/`) and launch the file, or give "
            f"--entrypoint 'recipes/{rest[0]}.py --config configs/...' (a /maple port comment takes the same option)")
    return _torchrun_like(argv[2:], shell, stages, ctx)


def _torchrun_jsc(argv, shell, stages, ctx):
    return _torchrun_like(argv[1:], shell, stages, ctx)


def _composer(argv, shell, stages, ctx):
    from .launch import finish

    opts, rest = parse_options(argv[1:], grammar("composer"))
    if not rest:
        return None
    # without -n composer starts one rank per visible device (its docs; unconfirmed): torchrun's `--nproc_per_node gpu`
    torchrun = {"nproc_per_node": opts.get("nproc", ["gpu"])}
    if "world_size" in opts and "nproc" in opts:  # composer's world size counts ranks, torchrun's nnodes nodes
        torchrun["nnodes"] = [f"$(({last(opts, 'world_size')} / {last(opts, 'nproc')}))"]
    if "module_mode" in opts:
        return finish([*stages, ("torchrun", torchrun)], f"-m {rest[0]}", rest[1:], shell, ctx)
    return finish([*stages, ("torchrun", torchrun)], rest[0], rest[1:], shell, ctx)


def _llamafactory(argv, shell, stages, ctx):
    from .launch import finish

    env = {**{k: v for k, v in shell.vars.items() if isinstance(v, str)}, **ctx.env}
    # `train` runs torchrun when FORCE_TORCHRUN is set or more than one device is visible, else the
    # program in the same process (LLaMA-Factory's src/llamafactory/cli.py, main(), read 2026-11-29)
    visible = env.get("CUDA_VISIBLE_DEVICES")
    devices = len(visible.split(",")) if visible and "$" not in visible else int(shell.runtime.get(DEVICES, "0"))
    if argv[1:2] != ["train"] or (env.get("FORCE_TORCHRUN", "").lower() not in ("1", "true") and devices < 2):
        return None
    # without NPROC_PER_NODE LLaMA-Factory starts one worker per device (get_device_count()): torchrun's
    # `--nproc_per_node gpu`
    torchrun = {"nproc_per_node": ["gpu"], **{option: [env[name]] for name, option in _LLAMAFACTORY_ENV.items() if env.get(name)}}
    for name in ("FORCE_TORCHRUN", *_LLAMAFACTORY_ENV):  # torchrun's options now, not the program's variables
        ctx.env.pop(name, None)
    return finish([*stages, ("torchrun", torchrun)], "-m llamafactory.launcher", argv[2:], shell, ctx)


def _idr_accelerate(argv, shell, stages, ctx):
    from .launch import _dl_stage
    from .options import ACCELERATE

    # IDRIS's wrapper sizes accelerate from the Slurm job: every node of it, every GPU of each
    opts = ["--num_machines", "$SLURM_NNODES", "--num_processes", "$((SLURM_NNODES * SLURM_GPUS_ON_NODE))"]
    if "--zero_stage" in argv or any(a.startswith("--zero_stage=") for a in argv):
        opts.append("--use_deepspeed")
    return _dl_stage("accelerate", [*opts, *argv[1:]], ACCELERATE, shell, stages, ctx)


def _ray(argv, shell, stages, ctx):
    """`ray job submit [OPTIONS] -- ENTRYPOINT...`: the job's driver is the command after `--` ("You must
    provide the entrypoint command last (after the --)", docs.ray.io cluster/running-applications/
    job-submission/cli.html, read 2026-11-29); `ray start`, `ray status`: None, read as set-up."""
    from .launch import chain

    if argv[1:3] != ["job", "submit"] or "--" not in argv:
        return None
    return chain(argv[argv.index("--") + 1:], shell, stages, ctx)


_READERS = {"colossalai": _colossalai, "ray": _ray, "tune": _tune, "torchrun_jsc": _torchrun_jsc, "composer": _composer,
            "llamafactory-cli": _llamafactory, "idr_accelerate": _idr_accelerate}


# `$(which prog)`, `$(command -v prog)`, `$(type -P prog)` and their backquoted forms print the path
# the shell finds `prog` at (bash manual, "Bash Builtins": command -v, type -P; which(1)): the program
# is `prog` as PATH finds it, on the target too; for a path (`$(command -v /opt/py3.7/bin/python3.7)`)
# it prints that path when the file is executable there, so the command is that file.
_LOOKUP = r"(?:which|command\s+-v|type\s+-P)\s+([\w.+/-]+)"
_ON_PATH = re.compile(rf"\$\({_LOOKUP}\)|`{_LOOKUP}`")


def on_path(entry: Optional[str]) -> Optional[str]:
    found = _ON_PATH.fullmatch(entry or "")
    return (found[1] or found[2]) if found else entry
