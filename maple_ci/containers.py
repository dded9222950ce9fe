"""A source's container on the target: the target's runtime when the image can run there, else
the site's framework set-up; a header note either way.

An image runs where the source ran it: its CPU architecture and GPU vendor are the source
cluster's (profiles), or x86_64 + NVIDIA when the source cluster is unknown (what Docker Hub and
NGC images mostly are). Image names are rewritten only between the runtimes' spellings of the
same registry image: Shifter's `nersc/pytorch:24.06` (or `docker:...`) is Apptainer's
`docker://nersc/pytorch:24.06`. A .sif file or a variable ($SIF) stays as written; Shifter and
podman-hpc cannot run those.
"""

import re
from dataclasses import dataclass, field
from typing import Optional

from .intent import Container, JobIntent
from .profiles import ClusterProfile, load_profiles

_SIF = re.compile(r"\.(sif|simg|sing|img)$")
_URL = re.compile(r"^[a-z]+://")  # docker://, oras://, library://, shub://


@dataclass
class Ported:
    """The words that run a program in the image on the target (None: the site's modules instead)."""

    words: Optional[list[str]]
    notes: list[str] = field(default_factory=list)


def _registry_name(image: str) -> Optional[str]:
    """`name:tag` of a registry image in any runtime's spelling; None for files and variables."""
    if image.startswith("docker://"):
        return image[len("docker://"):]
    if _URL.match(image) or _SIF.search(image) or image.startswith(("/", ".", "~", "$")):
        return None
    name = image[len("docker:"):] if image.startswith("docker:") else image
    # Pyxis/enroot write `registry#path` (nvcr.io#nvidia/pytorch:24.01-py3); registries write a slash
    return name.replace("#", "/", 1) if re.fullmatch(r"[\w.-]+(?::\d+)?#\S+", name) else name


def _image_for(runtime: str, image: str) -> tuple[Optional[str], str]:
    """(the image as `runtime` names it or None if it cannot run it, what the user must do first)."""
    name = _registry_name(image)
    if runtime in ("apptainer", "singularity"):
        if name is None:
            return image, f"make {image} available on the target first (the path is kept as written)"
        return f"docker://{name}", (f"convert it once with `{runtime} pull image.sif docker://{name}` and use "
                                    "the .sif: otherwise every node converts it at start")
    if name is None:
        return None, ""
    if runtime == "shifter":
        return f"--image=docker:{name}", f"pull it first with `shifterimg pull docker:{name}`"
    return name, f"pull it first with `podman-hpc pull {name}`"


def _built_for(intent: JobIntent) -> tuple[str, str, bool]:
    """(cpu_arch, gpu_vendor, whether known) of the machine the source ran its image on."""
    source = load_profiles().get(intent.source_cluster or "")
    if source:
        return source.cpu_arch, source.gpu_vendor, True
    return "x86_64", "nvidia", False


def port_container(intent: JobIntent, profile: ClusterProfile, launcher: str) -> Ported:
    """Where the template's launch runs the program in the target's runtime (module docstring)."""
    container: Optional[Container] = intent.container
    if container is None:
        return Ported(None)
    arch, vendor, known = _built_for(intent)
    image = container.image
    article = "an" if container.runtime[0] in "aeiou" else "a"
    what = f"the source ran the program in {article} {container.runtime} container ({image or 'image not named'})"
    runtime = profile.container.runtime
    assumed = "" if known else " (assumed: the source cluster is not known)"
    why = None
    if image is None:
        why = "the image is not named in the script"
    elif (arch, vendor) != (profile.cpu_arch, profile.gpu_vendor):
        why = (f"it is built for {arch} with {vendor} GPUs{assumed} and {profile.display_name} is {profile.cpu_arch} "
               f"with {profile.gpu_vendor} GPUs")
    elif runtime == "none":
        why = f"{profile.display_name} has no container runtime for GPU jobs"
    elif launcher == "deepspeed":
        why = "DeepSpeed's own launcher starts the ranks over ssh, outside any container"
    else:
        name, todo = _image_for(runtime, image)
        if name is None:
            why = f"{runtime} runs only registry images, not {image}"
        else:
            words = [*profile.container.command, *profile.container.gpu_flags, *profile.container.binds, name]
            notes = [f"{what}; it runs in the same image under {profile.name}'s {runtime}: {todo}"]
            if container.options:  # binds name the source site's paths; the program may read them
                notes.append(f"the source's {container.runtime} options are not carried over "
                             f"({' '.join(container.options)}): bind your data the same way on {profile.name}")
            return Ported(words, notes)
    return Ported(None, [f"{what}; not used here: {why}, so {profile.name}'s own framework set-up runs it"])


def wrapper_notes(intent: JobIntent, per_device: bool, profile: ClusterProfile, launcher: str) -> list[str]:
    """What became of the source's per-rank wrapper (kept in front of python by per-device launches)."""
    if not intent.wrapper:
        return []
    shown = " ".join(intent.wrapper)
    if per_device:
        return [f"the per-rank wrapper `{shown}` is kept in front of the program; check it exists on {profile.name}"]
    return [f"the per-rank wrapper `{shown}` is not kept: {launcher} starts the ranks on {profile.name}, so there "
            "is no per-rank command to put it in front of; call it from the program or pick a per-device launch"]
