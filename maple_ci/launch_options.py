"""What a port does with each option of the source's per-node launcher (issue 25, part D: a launcher
option that changes the program's behaviour is carried in the target's form or named, never dropped).

The registry (launchers/grammars.yaml) places every option it knows: placement (the job's shape and
rendezvous) is computed for the target; mode (strategy, config files, the program's form) is carried
as those; behaviour (`--mixed_precision bf16`, `--max_restarts 3`) is carried as the same flag where the
port runs the same launcher, or as the variable the launcher would have set for its workers where
the port starts them another way (accelerate's, which the program's Accelerator reads; then the
settings of the source's accelerate config file go the same way, since nothing reads the file). A
behaviour option with neither form, and any option the registry does not place, is named in the header.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .intent import JobIntent
from .launchers import Launcher, launcher
from .library import TemplateMeta

# A flag carried as a variable: what accelerate's launcher writes for a flag that is set.
_FLAG_VALUE = "true"


@dataclass
class Carried:
    """The source launcher's behaviour options as the port carries them."""

    flags: list[str] = field(default_factory=list)  # words for the port's launcher (the source's own)
    env: dict[str, str] = field(default_factory=dict)  # variables for the workers
    given: frozenset = frozenset()  # option names carried: a template leaves its own default for them out
    notes: list[str] = field(default_factory=list)


def _source_launcher(intent: JobIntent) -> Optional[Launcher]:
    found = launcher(intent.launcher)
    return found if found is not None and found.kind == "dl" else None


def _words(name: str, value: str) -> str:
    return f"--{name}" if value == "" else f"--{name}={value}"


def carry(intent: JobIntent, template: TemplateMeta) -> Carried:
    """The source launcher's options in the form `template` takes them, and notes on the rest."""
    source = _source_launcher(intent)
    if source is None or not (intent.launcher_options or intent.config_options):
        return Carried()
    same = template.launcher == intent.launcher
    carried, unplaced, stranded = Carried(), [], []
    if not same:  # no accelerate launch reads the source's config file: its settings go as the variables
        carried.env = {source.variable(name): value for name, value in intent.config_options.items()}
        carried.given = frozenset(intent.config_options)
    for name, value in intent.launcher_options.items():
        role = source.role(name)
        if role in ("placement", "mode"):
            continue
        variable = source.variable(name)
        if role == "behaviour" and same:
            carried.flags.append(_words(name, value))
        elif role == "behaviour" and variable:
            carried.env[variable] = value if value != "" else _FLAG_VALUE
        else:
            (stranded if role == "behaviour" else unplaced).append(_words(name, value))
            continue
        carried.given |= {name}
    carried.notes = _notes(intent.launcher, template, stranded, unplaced, carried)
    return carried


def _notes(name: str, template: TemplateMeta, stranded: list[str], unplaced: list[str], carried: Carried) -> list[str]:
    notes = []
    if carried.env:
        notes.append(f"the source's {name} settings (its options and config file) are set as the variables {name} gives "
                     f"its workers, since the port starts them with {template.launcher}: "
                     + ", ".join(f"{k}={v}" for k, v in carried.env.items()))
    if stranded:
        notes.append(f"not carried: the source's {name} option(s) {' '.join(stranded)} change how the program runs, "
                     f"and the port starts it with {template.launcher}, which has no equivalent: do without them "
                     "or port with a template that runs " + name)
    if unplaced:
        notes.append(f"not carried: the source's {name} option(s) {' '.join(unplaced)} (maple does not know what "
                     "they do to the program): check whether it needs them on the target")
    return notes
