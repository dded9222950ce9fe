"""A container in front of the program: its runtime and image are JobIntent.container, its own options
(`--nv`, `--pwd`, `--env`, `--bind`) are never the program, and the command after the image is read on
through the launch chain (`apptainer exec --nv img.sif bash -c "... torchrun -m pkg.train"`).

Forms, each from its runtime's own usage: `apptainer|singularity exec|run [opts] IMAGE CMD`, `podman-hpc|
podman|docker run [opts] IMAGE CMD`, `shifter --image=IMAGE CMD`, `enroot start [opts] [--] NAME|IMAGE
[CMD]` (NVIDIA/enroot doc/cmd/start.md, read 2026-11-29), and Pyxis' `srun --container-image`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

from ..intent import Container
from .options import CONTAINER, ENROOT, OCI_RUN, last, parse_options

if TYPE_CHECKING:
    from .launch import Launch, _Context
    from .walk import Shell

CONTAINERS = {"apptainer", "singularity", "podman-hpc", "podman", "docker", "shifter", "enroot"}
_OCI_ENGINES = {"podman-hpc", "podman", "docker"}
_SUBCOMMANDS = {"enroot": ("start",)}  # the others: exec, run


def container(head: str, argv: list[str], shell: "Shell", stages: list, ctx: "_Context") -> Optional["Launch"]:
    from .launch import chain

    if head == "shifter":
        opts, rest = parse_options(argv[1:], CONTAINER)
        image = last(opts, "image")
        options = argv[1:len(argv) - len(rest)]
    elif argv[1:2] and argv[1] in _SUBCOMMANDS.get(head, ("exec", "run")):
        opts, rest = parse_options(argv[2:], _spec(head))
        rest = rest[1:] if rest[:1] == ["--"] else rest
        if not rest:
            return None
        image, options, rest = rest[0], argv[2:len(argv) - len(rest)], rest[1:]
    else:
        return None
    ctx.container = Container(runtime=head, image=image, options=[o for o in options if not o.startswith("--image")])
    return chain(rest, shell, stages, ctx)


# A runtime named by a variable the job's environment sets (`$APPTAINER exec`, `${SING} run`, a site
# module's `$CONTAINER_CMD exec`): the variable's name says which; its verbs and options are the runtime's
_NAMED_RUNTIME = re.compile(r"(?i)\$\{?\w*?(apptainer|singularity|sing|podman|docker|container|enroot)\w*\}?")
_RUNTIME_OF_NAME = {"sing": "singularity", "container": "apptainer"}  # their exec|run grammar is Apptainer's


def named_runtime(argv: list[str]) -> Optional[str]:
    """The runtime a variable in command position names (`$APPTAINER exec IMG CMD`), or None."""
    found = _NAMED_RUNTIME.fullmatch(argv[0]) if len(argv) > 2 else None
    runtime = _RUNTIME_OF_NAME.get(found[1].lower(), found[1].lower()) if found else None
    return runtime if runtime and argv[1] in _SUBCOMMANDS.get(runtime, ("exec", "run")) else None


def _spec(head: str):
    return ENROOT if head == "enroot" else OCI_RUN if head in _OCI_ENGINES else CONTAINER


def pyxis(opts: dict, shell: "Shell", ctx: "_Context") -> None:
    """Pyxis/enroot: `--container-image`, or `--container-name` alone, which reuses the container an
    earlier step of the job created under that name from its image (Pyxis' README: a named container
    is kept for the job's later steps)."""
    image, name = last(opts, "container_image"), last(opts, "container_name")
    if image and name:
        shell.pyxis[name] = image
    image = image or shell.pyxis.get(name)
    if image:
        ctx.container = Container(runtime="pyxis", image=image,
                                  options=[f"--container-mounts={m}" for m in opts.get("container_mounts", [])])
    if name and not last(opts, "container_image"):
        where = f"the container an earlier step made from {image}" if image else "a container the job made earlier"
        ctx.notes.append(f"the program runs in {where} (--container-name={name}), with what that step installed in it; "
                         "the port starts from the image: install those packages in your environment or image")
