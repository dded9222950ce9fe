"""A source's container on the target: the target's runtime when the image can run there, else
the site's framework set-up; a header note either way.

An image runs where the source ran it: its CPU architecture and GPU vendor are the source
cluster's (profiles), or x86_64 + NVIDIA when the source cluster is unknown (what Docker Hub and
NGC images mostly are). Image names are rewritten only between the runtimes' spellings of the
same registry image: Shifter's `nersc/pytorch:24.06` (or `docker:...`) is Apptainer's
`docker://nersc/pytorch:24.06`. A .sif file or a variable ($SIF) stays as written; Shifter and
podman-hpc cannot run those.

An image runs code chosen by whoever pushed it, and a tag can be re-pushed after a port was
approved: a source's image is used only when the target profile lists it among its allowed images
pinned by digest (container.allowed_images); otherwise the site's framework set-up runs the
program. The source's data binds become notes with the target's path left to fill in.
"""

import re
from dataclasses import dataclass, field
from typing import Optional

from .intent import Container, JobIntent
from .profiles import ClusterProfile, load_profiles
from .values import reason

_SIF = re.compile(r"\.(sif|simg|sing|img)$")
_URL = re.compile(r"^[a-z]+://")  # docker://, oras://, library://, shub://
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")  # a digest names one image; a tag can be re-pushed
_BIND_FLAGS = {"-B", "--bind", "-V", "--volume", "-v", "--container-mounts"}
_CHECKOUT = {"$PWD", "${PWD}", ".", "$(pwd)"}  # the submit directory: the port's job runs there too


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
    elif not allowed(image, profile):
        why = f"its image is not on {profile.name}'s list of allowed images pinned by digest ({reason('container_image')})"
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
            if container.options:  # overlays, --pwd, --env: the runtime's own flags are not carried
                notes.append(f"the source's {container.runtime} options are not carried over ({' '.join(container.options)})")
            return Ported(words, notes + bind_notes(container, profile, kept=True))
    return Ported(None, [f"{what}; not used here: {why}, so {profile.name}'s own framework set-up runs it",
                         *bind_notes(container, profile, kept=False)])


def binds(container: Container) -> list[tuple[str, str]]:
    """(host path, path in the container) of each bind in the runtime's options, in any spelling:
    Apptainer -B/--bind a[:b],c; Shifter -V/--volume; podman -v; Pyxis --container-mounts=a:b,c."""
    found, options = [], container.options
    for i, word in enumerate(options):
        flag, equals, value = word.partition("=")
        if flag in _BIND_FLAGS and not equals:
            value = options[i + 1] if i + 1 < len(options) else ""
        elif not equals and (short := next((f for f in ("-B", "-V", "-v") if word.startswith(f) and len(word) > 2), None)):
            flag, value = short, word[2:]
        if flag not in _BIND_FLAGS or not value:
            continue
        for entry in value.split(","):
            host, _, inside = entry.partition(":")
            found.append((host, inside.split(":")[0] or host))
    return found


def bind_notes(container: Container, profile: ClusterProfile, kept: bool) -> list[str]:
    """One note per data bind of the source, with the target's path left for the user to fill in."""
    if kept:
        return [f"the source bound {host} at {inside} ({reason('container_binds')}): bind your copy on "
                f"{profile.name} the same way (<your path on {profile.name}>:{inside})"
                for host, inside in binds(container) if host not in _CHECKOUT]
    return [f"the source bound {host} at {inside} in its container ({reason('container_binds')}): the program now "
            f"runs without it, so give it <your path on {profile.name}> wherever it reads {inside}"
            for host, inside in binds(container) if host not in _CHECKOUT]


def allowed(image: str, profile: ClusterProfile) -> bool:
    """Whether the target site lists the image, pinned by digest, as one its jobs may run."""
    name = _registry_name(image)
    return bool(name and _DIGEST.search(name) and name in {_registry_name(i) for i in profile.container.allowed_images})


def wrapper_notes(wrapper: list[str], per_device: bool, profile: ClusterProfile, launcher: str) -> list[str]:
    """What became of the per-rank wrapper values.port_wrapper kept (in front of python by per-device launches)."""
    if not wrapper:
        return []
    shown = " ".join(wrapper)
    if per_device:
        return [f"the per-rank wrapper `{shown}` is kept in front of the program; check it exists on {profile.name}"]
    return [f"the per-rank wrapper `{shown}` is not kept: {launcher} starts the ranks on {profile.name}, so there "
            "is no per-rank command to put it in front of; call it from the program or pick a per-device launch"]
