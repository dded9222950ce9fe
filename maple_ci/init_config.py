"""`maple init` and `maple config check`: a repository's .github/maple.yml and workflows, written
from the launch scripts it holds, and an existing configuration checked the way the bot reads it.

The bot's onboarding PR (github/onboarding.py) proposes the same file from the same detection.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path, PurePosixPath
from typing import Iterable, NamedTuple

from maple_ci.errors import MapleError
from maple_ci.files import write_inside
from maple_ci.github.config import DEFAULT_PATH, load_config
from maple_ci.github.pipeline import LAUNCH_SUFFIXES
from maple_ci.paths import bundled

# A scheduler directive on its own line: what makes a `.sh` file a launch script.
_DIRECTIVE = re.compile(r"^#(SBATCH|PBS|BSUB|COBALT|flux:)\s", re.M)
_BATCH_SUFFIXES = (".sbatch", ".slurm", ".pbs", ".qsub")  # named as a launch script whatever it holds
_SKIPPED = {".git", ".github", "node_modules", ".venv", "venv", "__pycache__", ".tox", "build", "dist"}
MAX_FILES = 20000  # files looked at before the walk stops: a monorepo's tail is not worth a minute
MAX_READ = 65536  # bytes read of each candidate: directives sit at the top
MAX_RECOGNISED = 50  # scripts whose cluster is recognised (a child process each); enough to propose targets
# One proposed target per GPU vendor (a port to each exercises every vendor's stack), skipping the
# scripts' own clusters; the maintainer edits the list in the PR or the file.
PROPOSED = (("perlmutter", "polaris"), ("frontier", "lumi"), ("aurora",))
WORKFLOWS = ("maple-comment.yml", "maple-push.yml", "maple-nightly.yml")


class Proposal(NamedTuple):
    scripts: dict[str, str | None]  # launch script -> the cluster it was written for (None: not recognised)
    sources: list[str]  # the `sources` globs covering them
    targets: list[str]
    config: str  # the .github/maple.yml text


def detect_scripts(root: Path, output: str = "scripts") -> list[str]:
    """The launch scripts under `root` (repository-relative, sorted), ported ones (under `output`) left out."""
    found, seen = [], 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED)
        for name in sorted(files):
            seen += 1
            if seen > MAX_FILES:
                return sorted(found)
            path = Path(folder) / name
            relative = path.relative_to(root).as_posix()
            if not PurePosixPath(relative).is_relative_to(output) and _launch_script(path):
                found.append(relative)
    return sorted(found)


def _launch_script(path: Path) -> bool:
    if path.is_symlink() or path.suffix not in LAUNCH_SUFFIXES:
        return False
    if path.suffix in _BATCH_SUFFIXES:
        return True
    with path.open("rb") as f:
        return bool(_DIRECTIVE.search(f.read(MAX_READ).decode("utf-8", "replace")))


def source_globs(scripts: Iterable[str]) -> list[str]:
    """One glob per folder and suffix (`jobs/*.sbatch`), so a script added beside them is tracked too."""
    return sorted({(PurePosixPath(s).parent / f"*{PurePosixPath(s).suffix}").as_posix() for s in scripts})


def _written_for(root: Path, script: str) -> str | None:
    """The cluster a script was written for, as the extractor recognises it; None when it cannot tell.
    Read as the bot reads any script (in a child process within extract.isolated's limits): the
    onboarding PR runs this on whatever the default branch holds."""
    from maple_ci.extract.isolated import extract_isolated

    try:
        text = (root / script).read_text(encoding="utf-8", errors="replace")[:MAX_READ]
        return extract_isolated(text, script, (root / script).parent).source_cluster
    except MapleError:
        return None


def propose_targets(own: Iterable[str], known: Iterable[str]) -> list[str]:
    """One known cluster per GPU vendor that none of the scripts was written for."""
    own, known = set(own), set(known)
    return [next(c for c in choices if c in known and c not in own)
            for choices in PROPOSED if any(c in known and c not in own for c in choices)]


def propose(root: Path, known: Iterable[str]) -> Proposal:
    """What `maple init` and the onboarding PR propose for the repository at `root`."""
    known = sorted(known)
    found = detect_scripts(root)
    scripts = {s: _written_for(root, s) if i < MAX_RECOGNISED else None for i, s in enumerate(found)}
    sources = source_globs(scripts)
    targets = propose_targets([c for c in scripts.values() if c], known)
    return Proposal(scripts, sources, targets, render_config(scripts, sources, targets, known))


def render_config(scripts: dict[str, str | None], sources: list[str], targets: list[str], known: list[str]) -> str:
    """The .github/maple.yml text: the settings a person edits, each with what it does."""
    found = [f"#   {s}" + (f" (written for {c})" if c else "") for s, c in scripts.items()] or ["#   (none: list yours under `sources`)"]
    return "\n".join([
        "# maple-ci's settings (maple-ci's docs/bot.md). Check them with `maple config check`.",
        "# Launch scripts found:", *found,
        f"targets: {json.dumps(targets)}  # clusters to keep the scripts ported to; known: {', '.join(known)}",
        f"sources: {json.dumps(sources)}  # globs of the tracked launch scripts",
        "output: scripts  # ported scripts go to scripts/<cluster>/",
        "verification:",
        "  default: none  # none | slurm | local (a self-hosted runner on the machine) | jacamar (a center's GitLab)",
        "schedule:",
        "  interval: daily  # nightly verification: daily | weekly | monthly",
        "pull_requests:",
        "  limit: 10  # open maple-ci PRs at most before push and nightly runs wait",
        "",
    ])


def workflows(sources: list[str]) -> dict[str, str]:
    """{path: text} of the three workflows, the push workflow's `paths` following `sources`."""
    folder = bundled("workflows") / "github"
    files = {f".github/workflows/{name}": (folder / name).read_text(encoding="utf-8") for name in WORKFLOWS}
    if sources:
        push = files[".github/workflows/maple-push.yml"]
        files[".github/workflows/maple-push.yml"] = re.sub(
            r"(?m)^    paths: .*$", lambda _: f"    paths: {json.dumps([*sources, DEFAULT_PATH])}", push, count=1)
    return files


def init(root: Path, known: Iterable[str], force: bool = False) -> tuple[Proposal, list[str]]:
    """Write .github/maple.yml and the workflows under `root`; the proposal and the paths written.
    Refuses to overwrite an existing file unless `force`."""
    proposal = propose(root, known)
    files = {DEFAULT_PATH: proposal.config, **workflows(proposal.sources)}
    there = [p for p in files if (root / p).exists()]
    if there and not force:
        raise MapleError(f"Not overwritten: {', '.join(there)} already exist(s); `maple config check` checks a "
                         "configuration, `maple init --force` replaces them.", exit_code=2)
    for path, text in files.items():
        write_inside(root, Path(path), text)  # a checkout's planted symlink cannot redirect it
    return proposal, list(files)


def check(path: Path, root: Path, known: Iterable[str]) -> list[str]:
    """The problems with the configuration at `path` as the bot reads it (its messages), plus
    sources that match no script under `root` and a missing file; [] when it is fine."""
    if not path.is_file():
        return [f"{path} does not exist: `maple init` writes one; without it the bot only opens its onboarding PR."]
    try:
        config = load_config(path, known)
    except MapleError as error:
        return [str(error)]
    problems = [f"{path}: `sources` glob {g!r} matches no file" for g in config.sources if not any(root.glob(g))]
    if not config.targets:
        problems.append(f"{path}: `targets` is empty: push and nightly runs port nothing.")
    return problems
