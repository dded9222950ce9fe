"""A repository's own cluster profiles (.github/maple/clusters/*.yaml, e.g. written by
`maple cluster discover`), for the bot. A profile is code that shapes scripts, so only a
maintainer's file counts: they are read from the workspace the bot reads its configuration from,
the default branch's checkout (workflows/github: a PR head is only fetched beside it), never from a
PR's head. Each must pass the profile schema, and every variable it sets must be one the values
table lets a port set for its target (values.edit_refusal, the debug agent's rule too)."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from ..errors import MapleError

FOLDER = ".github/maple/clusters"


def problems(path: Path) -> list[str]:
    """What is wrong with one repository profile; empty when it may be used."""
    from ..profiles import ClusterProfile
    from ..values import edit_refusal

    if path.is_symlink() or not path.is_file():  # a link could name a file outside the checkout
        return [f"{path}: not a regular file"]
    try:
        profile = ClusterProfile.model_validate(yaml.safe_load(path.read_text()))
    except Exception as exc:  # the schema's or YAML's own message, naming the field
        return [f"{path}: {exc}"]
    settings = {**profile.env, **{name: value for setup in profile.frameworks.values() for name, value in setup.env.items()}}
    return [f"{path}: {why}" for name, value in sorted(settings.items()) if (why := edit_refusal(name, value))]


def use_repository_profiles(workspace: Path, env: dict = os.environ) -> list[Path]:
    """Check the repository's profiles under `workspace` and add their folder to MAPLE_CLUSTERS_DIR;
    one bad file stops the run (MapleError naming each problem) and adds nothing."""
    folder = workspace / FOLDER
    if folder.is_symlink() or not folder.is_dir():
        return []
    paths = sorted(folder.glob("*.yaml"))
    found = [problem for path in paths for problem in problems(path)]
    if found:
        raise MapleError("the repository's cluster profiles cannot be used:\n" + "\n".join(found))
    env["MAPLE_CLUSTERS_DIR"] = os.pathsep.join(p for p in (env.get("MAPLE_CLUSTERS_DIR"), str(folder.resolve())) if p)
    return paths
