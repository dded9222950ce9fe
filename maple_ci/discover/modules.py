"""A module listing as facts: the modules `module -t avail` shows (terse, or the columns of a plain
`module avail`), sorted by kind with templates/discover/software.yaml. Lmod's markers ((D) default,
(L) loaded, <aL>) are read, not kept: the default one of several PyTorch modules is the one loaded."""

from __future__ import annotations

import re
from functools import lru_cache

import yaml

from ..paths import templates_dir
from . import Fact, told, unconfirmed

_HEADING = re.compile(r"^\s*-+\s*\S.*-+\s*$|^\S.*:$")  # "---- /path ----" or terse "/path:"
_MARKERS = re.compile(r"\((?:[A-Za-z,]+)\)|<[A-Za-z,]+>")


@lru_cache(maxsize=1)
def kinds() -> dict[str, re.Pattern]:
    data = yaml.safe_load((templates_dir() / "discover" / "software.yaml").read_text())
    return {kind: re.compile("|".join(f"(?:{name})" for name in names), re.I) for kind, names in data.items()}


def listing(text: str) -> tuple[list[str], set[str]]:
    """(the modules, in order; those marked default) of a `module avail` listing. Directories of a
    terse listing ("cuda/") and legend or help lines are not modules."""
    names, defaults = [], set()
    for line in text.splitlines():
        if _HEADING.match(line) or ":" in line or line.strip().startswith(("Where", "Use ", "If ", "Lmod", "Modules based")):
            continue
        for token in re.split(r"\s{2,}|\t|^\s+", line.strip()):
            marked = bool(re.search(r"\([\w,]*\bD\b[\w,]*\)", token))
            name = _MARKERS.sub("", token).strip()
            if re.fullmatch(r"[\w.+-]+(/[\w.+-]+)*", name) and not name.endswith("/"):
                names.append(name)
                if marked:
                    defaults.add(name)
    return list(dict.fromkeys(names)), defaults


def by_kind(names: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name in names:
        for kind, pattern in kinds().items():
            if any(pattern.fullmatch(part) for part in name.split("/")):  # brics/aws-ofi-nccl too
                found.setdefault(kind, []).append(name)
    return found


def pytorch_module(names: list[str], defaults: set[str]) -> str:
    """The PyTorch module a port loads: the default one, else the one named plainly `pytorch`, else
    the newest-sounding last in the listing's (Lmod's sorted) order; "" when there is none."""
    candidates = by_kind(names).get("pytorch", [])
    marked = [n for n in candidates if n in defaults]
    plain = [n for n in candidates if n.split("/")[0] == "pytorch"]
    for group in (marked, plain):
        if group:
            return group[0]
    return candidates[-1] if candidates else ""


def facts(probe) -> dict[str, Fact]:
    text = probe("modules")
    if text is None:
        return {"software": unconfirmed({}, "modules"), "pytorch_module": unconfirmed("", "modules")}
    names, defaults = listing(text)
    return {"software": told(by_kind(names), "modules"), "pytorch_module": told(pytorch_module(names, defaults), "modules")}
