"""A script that submits another script of the checkout (`sbatch -J x job.sh --config=mp`,
`qsub -l select=2 -v EPOCHS=30 train.pbs`): what runs is the submitted script, as the submit line
shapes it. Its text is read with the submit line's options written in as directives (the command
line wins over the file's own, as sbatch and qsub have it), the variables it passes (`--export`,
`-v`) set at the top, and its arguments as the job's own (`set --`), then extracted as any script.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Callable, Optional

from ..launchers import grammar, launcher, parse_options

_DIRECTIVE = re.compile(r"^[ \t]*#(?:SBATCH|PBS)[ \t].*$", re.M)


@dataclass
class Submitted:
    path: str  # the submitted script, as the submit line names it
    text: str  # its text with the submit line written in
    line: str  # the submit line, for the note


def submitted(submits: list[list[str]], read: Callable[[str], Optional[str]]) -> Optional[Submitted]:
    """The one script of the checkout that the submit lines submit; None when there is none, or
    several different ones (which of them to port is the user's choice)."""
    found = {}
    for argv in submits:
        options, rest = _options(argv)
        text = read(rest[0]) if rest else None
        if text is not None:
            found.setdefault(rest[0], (argv, options, rest[1:], text))
    if len(found) != 1:
        return None
    path, (argv, options, arguments, text) = next(iter(found.items()))
    head = argv[0].rsplit("/", 1)[-1]
    directives, env = _directives(head, options)
    setup = [f"export {name}={shlex.quote(value)}" for name, value in env]
    if arguments and head == "sbatch":  # qsub passes none to the job script
        setup.append(f"set -- {shlex.join(arguments)}")
    return Submitted(path, _written_in(text, directives, setup), shlex.join(argv))


def _options(argv: list[str]) -> tuple[dict, list[str]]:
    spec = launcher("srun").spec if argv[0].rsplit("/", 1)[-1] == "sbatch" else grammar("qsub")
    return parse_options(argv[1:], spec)  # sbatch takes srun's options


def _directives(head: str, options: dict) -> tuple[list[str], list[tuple[str, str]]]:
    """The submit options as directive lines, and the variables they pass to the job."""
    passed = "export" if head == "sbatch" else "v"
    lines, env = [], []
    for name, values in options.items():
        for value in values:
            if name == passed:
                env += [tuple(item.split("=", 1)) for item in value.split(",") if "=" in item]
            elif head == "sbatch":
                option = "--" + name.replace("_", "-")
                lines.append(f"#SBATCH {option}={value}" if value else f"#SBATCH {option}")
            else:
                lines.append(f"#PBS -{name} {value}".rstrip())
    return lines, env


def _written_in(text: str, directives: list[str], setup: list[str]) -> str:
    """The script with the directives after its own (the last of each wins) and the set-up after them."""
    lines = text.split("\n")
    headers = [i for i, line in enumerate(lines) if _DIRECTIVE.fullmatch(line)]
    at = headers[-1] + 1 if headers else int(bool(lines) and lines[0].startswith("#!"))
    return "\n".join([*lines[:at], *directives, *setup, *lines[at:]])
