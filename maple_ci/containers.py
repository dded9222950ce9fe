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
    srun_options: list[str] = field(default_factory=list)  # Container Engine / Pyxis: options of every srun
    edf: str = ""  # Container Engine: the command that writes the EDF next to the script (edf_block)


# Runtimes that are srun options, not a command before the program: the CSCS Container Engine
# (srun --environment=<EDF>.toml, https://docs.cscs.ch/software/container-engine/) and Pyxis
# (srun --container-image=, https://github.com/NVIDIA/pyxis), both read 2026-11-28.
SRUN_OPTION_RUNTIMES = {"container-engine", "pyxis"}
# --environment takes an absolute path to the EDF; one per job, so that two jobs submitted from the
# same folder cannot swap images by writing the other's EDF before its srun reads it.
EDF_PATH = "$PWD/maple-environment-$SLURM_JOB_ID.toml"
_ENROOT_SAFE = re.compile(r"[\w.:/#@+-]+")  # image words written into the EDF and srun options unquoted


def _registry_name(image: str) -> Optional[str]:
    """`name:tag` of a registry image in any runtime's spelling; None for files and variables."""
    if image.startswith("docker://"):
        return image[len("docker://"):]
    if _URL.match(image) or _SIF.search(image) or image.startswith(("/", ".", "~", "$")):
        return None
    name = image[len("docker:"):] if image.startswith("docker:") else image
    # Pyxis/enroot write `registry#path` (nvcr.io#nvidia/pytorch:24.01-py3); registries write a slash
    return name.replace("#", "/", 1) if re.fullmatch(r"[\w.-]+(?::\d+)?#\S+", name) else name


def _apptainer_image(runtime: str, image: str, name: Optional[str]) -> tuple[Optional[str], str]:
    if name is None:
        return image, f"make {image} available on the target first (the path is kept as written)"
    return f"docker://{name}", (f"convert it once with `{runtime} pull image.sif docker://{name}` and use "
                                "the .sif: otherwise every node converts it at start")


def _shifter_image(runtime: str, image: str, name: Optional[str]) -> tuple[Optional[str], str]:
    return (f"--image=docker:{name}", f"pull it first with `shifterimg pull docker:{name}`") if name else (None, "")


def _podman_image(runtime: str, image: str, name: Optional[str]) -> tuple[Optional[str], str]:
    return (name, f"pull it first with `podman-hpc pull {name}`") if name else (None, "")


def _enroot_image(runtime: str, image: str, name: Optional[str]) -> tuple[Optional[str], str]:
    """enroot (Container Engine, Pyxis) writes `registry#path:tag`; a name without a registry is Docker Hub's."""
    if not name or not _ENROOT_SAFE.fullmatch(name):
        return None, ""
    head, slash, rest = name.partition("/")
    enroot = f"{head}#{rest}" if slash and ("." in head or ":" in head) else name
    # container-engine/run (read 2026-11-28): pulled on first use, cached in ${SCRATCH}/.edf_imagestore
    return enroot, "the first job pulls and converts it (slow); later jobs use the cached copy"


# How each runtime names an image (None: it cannot run it) and what the user must do first. Shifter,
# podman-hpc and the enroot-based runtimes run only registry images; Apptainer/Singularity also a .sif.
_IMAGE_FORMS = {"apptainer": _apptainer_image, "singularity": _apptainer_image, "shifter": _shifter_image,
                "podman-hpc": _podman_image, "container-engine": _enroot_image, "pyxis": _enroot_image}


def _image_for(runtime: str, image: str) -> tuple[Optional[str], str]:
    """(the image as `runtime` names it or None if it cannot run it, what the user must do first)."""
    return _IMAGE_FORMS[runtime](runtime, image, _registry_name(image))


def _built_for(intent: JobIntent) -> tuple[str, str, bool]:
    """(cpu_arch, gpu_vendor, whether known) of the machine the source ran its image on."""
    source = load_profiles().get(intent.source_cluster or "")
    if source:
        return source.cpu_arch, source.gpu_vendor, True
    return "x86_64", "nvidia", False


def _not_runnable(intent: JobIntent, image: Optional[str], profile: ClusterProfile, launcher: str) -> Optional[str]:
    """Why the source's image cannot run on the target, or None when it can."""
    arch, vendor, known = _built_for(intent)
    assumed = "" if known else " (assumed: the source cluster is not known)"
    if image is None:
        return "the image is not named in the script"
    if not allowed(image, profile):
        return f"its image is not on {profile.name}'s list of allowed images pinned by digest ({reason('container_image')})"
    if (arch, vendor) != (profile.cpu_arch, profile.gpu_vendor):
        return (f"it is built for {arch} with {vendor} GPUs{assumed} and {profile.display_name} is {profile.cpu_arch} "
                f"with {profile.gpu_vendor} GPUs")
    if profile.container.runtime == "none":
        return f"{profile.display_name} has no container runtime for GPU jobs"
    if launcher == "deepspeed":
        return "DeepSpeed's own launcher starts the ranks over ssh, outside any container"
    if _image_for(profile.container.runtime, image)[0] is None:
        return f"{profile.container.runtime} runs only registry images, not {image}"
    return None


def edf_text(image: str, profile: ClusterProfile) -> str:
    """The Container Engine's environment definition: image, mounts, workdir, annotations (TOML)."""
    # The submit directory first: the job's workdir is there, and the EDF mounts nothing by itself.
    mounts = ", ".join(f'"{m}"' for m in ["$PWD:$PWD", *profile.container.binds])
    lines = [f'image = "{image}"', f"mounts = [{mounts}]", 'workdir = "$PWD"', "", "[annotations]"]
    return "\n".join(lines + [f'{key} = "{value}"' for key, value in profile.container.annotations.items()])


def edf_block(image: str, profile: ClusterProfile) -> str:
    """The script's command that writes the EDF (a here-document: `$PWD` expands when the job runs)."""
    return f'cat > "{EDF_PATH}" <<EOF\n{edf_text(image, profile)}\nEOF'


def _srun_form(runtime: str, image: str, profile: ClusterProfile) -> Ported:
    """The srun options (and the EDF) that run every srun step in the image."""
    if runtime == "pyxis":
        mounts = ",".join(["$PWD", *profile.container.binds])
        return Ported([], srun_options=[f"--container-image={image}", f'--container-mounts="{mounts}"',
                                        '--container-workdir="$PWD"'])
    return Ported([], srun_options=[f'--environment="{EDF_PATH}"'], edf=edf_block(image, profile))


def _in_image(container: Container, profile: ClusterProfile, what: str) -> Ported:
    """The target's runtime runs the program in the source's image (which it can run)."""
    runtime = profile.container.runtime
    name, todo = _image_for(runtime, container.image)
    if runtime in SRUN_OPTION_RUNTIMES:
        ported = _srun_form(runtime, name, profile)
    else:
        ported = Ported([*profile.container.command, *profile.container.gpu_flags, *profile.container.binds, name])
    ported.notes = [f"{what}; it runs in the same image under {profile.name}'s {runtime}: {todo}"]
    if container.options:  # overlays, --pwd, --env: the runtime's own flags are not carried
        ported.notes.append(f"the source's {container.runtime} options are not carried over ({' '.join(container.options)})")
    ported.notes += bind_notes(container, profile, kept=True)
    return ported


def port_container(intent: JobIntent, profile: ClusterProfile, launcher: str) -> Ported:
    """Where the template's launch runs the program in the target's runtime (module docstring)."""
    container: Optional[Container] = intent.container
    if container is None:
        return Ported(None)
    article = "an" if container.runtime[0] in "aeiou" else "a"
    what = f"the source ran the program in {article} {container.runtime} container ({container.image or 'image not named'})"
    why = _not_runnable(intent, container.image, profile, launcher)
    if why is None:
        return _in_image(container, profile, what)
    return Ported(None, [f"{what}; not used here: {why}, so {profile.name}'s own framework set-up runs it",
                         *bind_notes(container, profile, kept=False)])


def _bind_option(options: list[str], i: int) -> tuple[str, str]:
    """(flag, value) of options[i] as a bind: `--bind=a:b`, `--bind a:b` (value the next word),
    attached `-Ba:b`; the flag is not a bind flag when the word is none."""
    word = options[i]
    flag, equals, value = word.partition("=")
    if equals:
        return flag, value
    if flag in _BIND_FLAGS:
        return flag, options[i + 1] if i + 1 < len(options) else ""
    short = next((f for f in ("-B", "-V", "-v") if word.startswith(f) and len(word) > 2), None)
    return (short, word[2:]) if short else (word, "")


def _bind_entries(value: str) -> list[tuple[str, str]]:
    """(host path, path in the container) of each comma-separated `host[:inside[:options]]`."""
    return [(host, inside.split(":")[0] or host) for host, _, inside in (e.partition(":") for e in value.split(","))]


def binds(container: Container) -> list[tuple[str, str]]:
    """(host path, path in the container) of each bind in the runtime's options, in any spelling:
    Apptainer -B/--bind a[:b],c; Shifter -V/--volume; podman -v; Pyxis --container-mounts=a:b,c."""
    found = []
    for i in range(len(container.options)):
        flag, value = _bind_option(container.options, i)
        if flag in _BIND_FLAGS and value:
            found += _bind_entries(value)
    return found


# A data bind of the source, as a note: kept (the image runs here) or not (the site's set-up runs it).
_BIND_NOTES = {
    True: ("the source bound {host} at {inside} ({why}): bind your copy on {site} the same way "
           "(<your path on {site}>:{inside})"),
    False: ("the source bound {host} at {inside} in its container ({why}): the program now runs without it, so give "
            "it <your path on {site}> wherever it reads {inside}"),
}


def bind_notes(container: Container, profile: ClusterProfile, kept: bool) -> list[str]:
    """One note per data bind of the source, with the target's path left for the user to fill in."""
    return [_BIND_NOTES[kept].format(host=host, inside=inside, why=reason("container_binds"), site=profile.name)
            for host, inside in binds(container) if host not in _CHECKOUT]


def allowed(image: str, profile: ClusterProfile) -> bool:
    """Whether the target site lists the image, pinned by digest, as one its jobs may run."""
    name = _registry_name(image)
    return bool(name and _DIGEST.search(name) and name in {_registry_name(i) for i in profile.container.allowed_images})


def image_forms(profile: ClusterProfile) -> list[str]:
    """The exact texts a port runs an allowed image with on this cluster (the launch words, each srun
    option, the EDF's here-document): all the center's gate lets a script name a container with."""
    runtime, forms = profile.container.runtime, []
    for image in profile.container.allowed_images if runtime != "none" else ():
        name = _image_for(runtime, image)[0]
        if name is None:
            continue
        if runtime in SRUN_OPTION_RUNTIMES:
            ported = _srun_form(runtime, name, profile)
            forms += [ported.edf, *ported.srun_options]
        else:
            forms.append(" ".join([*profile.container.command, *profile.container.gpu_flags,
                                   *profile.container.binds, name]))
    return [form for form in forms if form]


def wrapper_notes(wrapper: list[str], per_device: bool, profile: ClusterProfile, launcher: str) -> list[str]:
    """What became of the per-rank wrapper values.port_wrapper kept (in front of python by per-device launches)."""
    if not wrapper:
        return []
    shown = " ".join(wrapper)
    if per_device:
        return [f"the per-rank wrapper `{shown}` is kept in front of the program; check it exists on {profile.name}"]
    return [f"the per-rank wrapper `{shown}` is not kept: {launcher} starts the ranks on {profile.name}, so there "
            "is no per-rank command to put it in front of; call it from the program or pick a per-device launch"]
