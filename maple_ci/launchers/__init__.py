"""The launcher registry: each launcher's option grammar and process model, from grammars.yaml.

Extraction reads every launch line through it (which option takes a value, where the program
begins, how many ranks a line starts); adding a launcher is adding its entry there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional

from ..data_cache import load_yaml
from .options import Spec, count_ranks, last, option_name, parse_options

__all__ = ["DL_LAUNCHERS", "MPI_LAUNCHERS", "RANK_VARIABLES", "Launcher", "Spec", "grammar", "last", "launcher", "names", "option_name",
           "parse_options"]


@dataclass(frozen=True)
class Launcher:
    name: str
    kind: str  # "mpi": one process per rank; "dl": starts the per-device workers itself
    spec: Spec
    source: str
    export_list: bool = False  # srun --export=ALL,A=1: a comma-separated list
    ranks: tuple = ()  # ((world alternatives), (per-node alternatives)): see grammars.yaml
    trace: Optional[dict] = None  # what `maple trace`'s stand-in sets for each worker and its defaults
    fix_options: dict = field(default_factory=dict)  # option name -> the form of its value (debug/policy.py)
    # What a per-node launcher's options mean to a port (grammars.yaml: placement, mode, behaviour)
    placement: frozenset = frozenset()
    mode: frozenset = frozenset()
    behaviour: tuple = ()  # ((option, the workers' variable it sets, or None), ...)

    def variable(self, name: str) -> Optional[str]:
        """The variable a behaviour option sets for the workers (accelerate's), or None."""
        return dict(self.behaviour).get(name)

    def role(self, name: str) -> Optional[str]:
        """"placement", "mode" or "behaviour"; None for an option the registry does not place."""
        if name in self.placement:
            return "placement"
        if name in self.mode:
            return "mode"
        return "behaviour" if name in dict(self.behaviour) else None

    def count(self, which: str, value: Callable[[str], Optional[int]]) -> Optional[int]:
        """Ranks in all (`which` "world") or per node ("per_node"): the first alternative whose
        options all have a known value, multiplied; None when none has."""
        return count_ranks(dict(self.ranks).get(which, ()), value)

    def exports(self, opts: dict) -> list[str]:
        """The NAME=VALUE and NAME items of its env/export options, lists split."""
        items = opts.get("env", []) + opts.get("export", [])
        if self.export_list:
            items = [part for item in items for part in item.split(",")]
        return items


def _load(entry: dict, name: str) -> Launcher:
    spec = Spec(aliases=dict(entry.get("aliases", {})), flags=frozenset(entry.get("flags", ())),
                values=frozenset(entry.get("values", ())), pairs=frozenset(entry.get("pairs", ())),
                value_default=entry.get("value_default", True), env_name_value=entry.get("env_name_value", False),
                subcommands=frozenset(entry.get("subcommands", ())),
                unknown_words_are_options=entry.get("unknown_words_are_options", True))
    ranks = tuple((which, tuple(tuple(names) for names in alternatives))
                  for which, alternatives in entry.get("ranks", {}).items())
    return Launcher(name, entry["kind"], spec, entry["source"], entry.get("export_list", False), ranks,
                    entry.get("trace"), dict(entry.get("fix_options", {})),
                    frozenset(entry.get("placement", ())), frozenset(entry.get("mode", ())),
                    tuple((entry.get("behaviour") or {}).items()))


@lru_cache(maxsize=1)
def _registry() -> dict[str, Launcher]:
    data = load_yaml(Path(__file__).parent / "grammars.yaml")
    return {name: _load(entry, name) for name, entry in data.items()}


def launcher(name: str) -> Optional[Launcher]:
    return _registry().get(name)


def names() -> tuple[str, ...]:
    return tuple(_registry())


def grammar(name: str) -> Spec:
    return _registry()[name].spec


MPI_LAUNCHERS = frozenset(name for name, entry in _registry().items() if entry.kind == "mpi")
DL_LAUNCHERS = frozenset(name for name, entry in _registry().items() if entry.kind == "dl")
# The variables a launcher sets to each process's global rank (its `trace: env: rank:` list)
RANK_VARIABLES = frozenset(name for entry in _registry().values() for name in ((entry.trace or {}).get("env") or {}).get("rank", ()))
