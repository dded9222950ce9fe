"""Which containers a committed script may run at the center: an allowlist of forms, not a list of
runtimes to look for. A script passes when, once the exact texts maple-ci writes for this cluster's
runtime with an image its profile allows pinned by digest (containers.image_forms) and the site's
own set-up are taken out, no word of any container runtime is left. The site's set-up is what
maple-ci's own ports for the cluster write with no container of the source: Daint's `--uenv`
directive, LUMI's `singularity run "$SIF"` with the site's image; a variable those forms read (SIF)
may not be set by the script otherwise. The words looked for: Apptainer/Singularity, Shifter, podman(-hpc), Docker, enroot/Pyxis, the CSCS
Container Engine's `--environment` EDF (a file, or a here-document), Sarus, Charliecloud (ch-run),
uenv. The image decides what runs and a tag can be pushed again after a maintainer approved the
commit, so every other image or container form is refused.

What this cannot see: a runtime's name built by the shell at run time (`r=appt; ${r}ainer`). The
gate is the second line behind the bot, which verifies only what a maintainer approved.
"""

import functools
import re

from maple_ci import schedulers
from maple_ci.center.checkout import Refused
from maple_ci.containers import allowed, image_forms
from maple_ci.errors import MapleError
from maple_ci.profiles import ClusterProfile

# A word that starts a container, names an image or an environment definition, in any runtime's
# spelling (each runtime's documentation, read 2026-11-29: apptainer.org, docs.nersc.gov/development/
# shifter, github.com/NVIDIA/pyxis, docs.cscs.ch/software/container-engine/ and /software/uenv/,
# sarus.readthedocs.io, hpc.github.io/charliecloud).
_CONTAINER_WORD = re.compile(
    r"(?<![\w-])(apptainer|singularity|shifter(img)?|podman(-hpc)?|docker|enroot|sarus|ch-run|ch-image|ch-convert|"
    r"charliecloud|uenv|squashfs-mount)(?![\w-])"
    r"|--(container-[a-z-]+|environment|uenv|image|view)\b"
    r"|\.(sif|simg|sqfs|squashfs|toml)\b|maple-environment")


def commands(text: str) -> str:
    """The script's commands and directives, without its comments (the port's notes)."""
    prefixes = tuple(unit.prefix for unit in schedulers.all())
    return "\n".join(line for line in text.splitlines()
                     if not line.lstrip().startswith("#") or line.lstrip().startswith(prefixes))


@functools.cache
def _site_forms(cluster: str) -> tuple[tuple[str, ...], re.Pattern | None]:
    """(the container texts maple-ci's own ports for `cluster` write without a source container,
    longest first; the assignments to the variables those read). Each line of a rendered row that
    names a container counts whole, and from its first container word on (the launch words after
    an srun's options, which depend on the job)."""
    from maple_ci.intent import JobIntent
    from maple_ci.library import load_templates
    from maple_ci.profiles import get_profile
    from maple_ci.synthesize import render

    intent, profile = JobIntent(nodes=1, entrypoint="train.py", script_args=[]), get_profile(cluster)
    lines, launches = set(), set()
    for template in (t for t in load_templates() if t.cluster == cluster and t.supported):
        for line in commands(render(intent, profile, template, "job.sh")).splitlines():
            found = _CONTAINER_WORD.search(line)
            if found:
                lines.add(line.strip().rstrip("\\").strip())
                launches.add(line[found.start():].rstrip("\\").strip())
    forms = lines | launches
    names = sorted({name for form in launches for name in re.findall(r"\$\{?(\w+)", form)})
    assigned = re.compile(rf"(?<![\w$]){'|'.join(names)}=") if names else None
    return tuple(sorted(forms, key=len, reverse=True)), assigned


def unlisted_container(text: str, profile: ClusterProfile) -> str | None:
    """The first container word of `text` that is not in a form the profile allows, or None."""
    rest = commands(text)
    site, assigned = _site_forms(profile.name)
    for form in [*sorted(image_forms(profile), key=len, reverse=True), *site]:
        rest = rest.replace(form, " ")
    found = _CONTAINER_WORD.search(rest) or (assigned.search(rest) if assigned else None)
    if found is None:
        return None
    line = rest[rest.rfind("\n", 0, found.start()) + 1:].split("\n", 1)[0].strip()
    return f"{found[0]!r} in `{line[:160]}`"


def refuse_unlisted_image(text: str, profile: ClusterProfile) -> None:
    """Refused unless every container the script runs is one maple-ci writes for the cluster with
    an image the profile allows (the extractor's reading, and the allowlist of forms above)."""
    from maple_ci.extract import extract_script

    try:
        container = extract_script(text).container
    except MapleError as exc:
        raise Refused(f"the script cannot be read: {exc}") from exc
    if container is not None and not (container.image and allowed(container.image, profile)):
        raise Refused(f"the script runs a container image ({container.image or 'not readable'}) that is not on "
                      f"{profile.name}'s list of allowed images pinned by digest")
    found = unlisted_container(text, profile)
    if found is not None:
        raise Refused(f"the script names a container or image in a form maple-ci does not write for {profile.name} "
                      f"with an image on its list of allowed images pinned by digest: {found}")
