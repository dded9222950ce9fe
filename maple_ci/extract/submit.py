"""A script that submits another script of the checkout (`sbatch -J x job.sh --config=mp`,
`qsub -l select=2 -v EPOCHS=30 train.pbs`), or a here-document (`sbatch <<EOF`, `cat <<EOF | qsub`):
what runs is the submitted script, as the submit line shapes it. Its text is read with the submit line's options written in as directives (the command
line wins over the file's own, as sbatch and qsub have it), the variables it passes (`--export`,
`-v`) set at the top, and its arguments as the job's own (`set --`), then extracted as any script.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Callable, Optional

from ..files import trailing_paths
from ..launchers import parse_options
from .. import schedulers
from .evaluate import RUNTIME_NAME


def _directive_pattern() -> re.Pattern:
    prefixes = "|".join(re.escape(unit.prefix) for unit in schedulers.all())
    return re.compile(rf"^[ \t]*(?:{prefixes})[ \t].*$", re.M)


@dataclass
class Submitted:
    path: str  # the submitted script, as the submit line names it
    text: str  # its text with the submit line written in
    line: str  # the submit line, for the note
    given: list = None  # variables it exports with a value its own shell expands per submission (A=$i)
    read_as: Optional[str] = None  # the checkout's file read for a path outside it (in_checkout)


def is_submit(argv: list[str]) -> bool:
    """`sbatch x.sh`, `qsub x.pbs`, `flux batch x.sh`, `bsub x.lsf` (not `flux run`)."""
    return schedulers.by_submit(argv) is not None


HERE_DOCUMENT = "the here-document"  # what a submit line with no script file submits: its input
COMMAND_LINE = "its command line"  # what `bsub [options] command` and `sbatch --wrap=...` submit


# A default for what the submitter gives: a job argument (`${1:-2}`) or a variable the script never
# sets, kept live by the reader (`${EPOCHS:-100}`: sbatch(1) --export=ALL and qsub -V pass the
# submitting shell's environment); its default may name a variable (`${CONF:-$BASE/x}`).
_SUBMITTER_DEFAULT = re.compile(r"\$\{([A-Za-z_]\w*|[1-9][0-9]*):?[-=]((?:[^$`{}]|\$\w+|\$\{\w+\})*)\}")


def without_arguments(word: str) -> str:
    """`word` as a script submitted with no arguments from an empty environment reads it:
    `${1:-configs/base.yaml}` and `${1:-${CONFIG:-configs/base.yaml}}` are their default. A submitter's
    own argument in its submit line is that too: the port is of the submitted job, which never gets
    the submitter's arguments."""
    # the scheduler's own variables (${SLURM_GPUS_ON_NODE:-1}) are the job's, not the submitter's: kept
    def bare_default(match: re.Match) -> str:
        return match.group(0) if RUNTIME_NAME.fullmatch(match.group(1)) else match.group(2)

    while (bare := _SUBMITTER_DEFAULT.sub(bare_default, word)) != word:
        word = bare
    return word


def submitted(submits: list[tuple[list[str], Optional[str]]],
              read: Callable[[str], Optional[str]]) -> Optional[Submitted]:
    """The one script that the submit lines (argv, the input a here-document gives) submit: a file
    of the checkout, or with no file named, the here-document (sbatch and qsub read the job script
    from standard input then); None when there is none, or several different ones (which of them
    to port is the user's choice)."""
    found = {}
    for argv, stdin in submits:
        argv = [without_arguments(word) for word in argv]
        unit = schedulers.by_submit(argv)
        options, rest = parse_options(argv[len(unit.submit):], unit.spec)
        key, text, arguments, read_as = _job(unit, options, rest, stdin, read)
        if text is not None:
            found.setdefault(key, (argv, unit, options, arguments, text, read_as))
    if len(found) != 1:
        return None
    path, (argv, unit, options, arguments, text, read_as) = next(iter(found.items()))
    directives, env = _directives(unit, options)
    setup = [f"export {name}={shlex.quote(value)}" for name, value in env if not _expanded(value)]
    if arguments and unit.passes_arguments:  # qsub passes none to the job script
        setup.append("set -- " + " ".join(map(_argument, arguments)))
    given = {name for name, value in env if _expanded(value) and re.fullmatch(r"[A-Za-z_]\w*", name)}
    given = sorted(given | {name for word in arguments if unit.passes_arguments for name in _given_names(word)})
    return Submitted(path.split("\0")[0], _written_in(text, directives, setup), shlex.join(argv), given, read_as)


def in_checkout(path: str, read: Callable[[str], Optional[str]]) -> tuple[Optional[str], Optional[str]]:
    """(the checkout file read for `path` when it is another, its text). A job file named by the site's
    absolute path (`/home/u/repo/sweeps/a/train.sh`, where the repository was checked out there) is the
    checkout's file at the longest end of that path found from the script's folder (`sweeps/a/train.sh`,
    at least `train.sh` beside the script); the note names the file read, so a wrong match is seen."""
    text = read(path)
    if text is not None or not path.startswith("/"):
        return None, text
    for tail in trailing_paths(path):
        text = read(tail)
        if text is not None:
            return tail, text
    return None, None


def _job(unit, options: dict, rest: list[str], stdin: Optional[str], read: Callable) -> tuple:
    """(what the line submits, the job's text, its arguments, the checkout file read for a site path):
    the script file, the input, the command the submit option wraps (`sbatch --wrap="python t.py"`)
    or the command line itself (`bsub -n 4 python t.py`); a script outside the checkout (or one the
    submitter writes) is a job of the line's size alone, where the line gives one."""
    wrapped = options.pop(unit.command_option, None) if unit.command_option else None
    if wrapped:
        return f"{COMMAND_LINE}\0{wrapped[-1]}", f"#!/bin/sh\n{wrapped[-1]}\n", [], None
    read_as, text = in_checkout(rest[0], read) if rest else (None, stdin)
    if text is None and rest and unit.runs_command:
        return f"{COMMAND_LINE}\0{shlex.join(rest)}", shlex.join(rest), [], None
    if text is None and rest and options:  # with no options the line tells nothing: the submitter's own reading stands
        return f"{rest[0]} (not in the checkout)", "", rest[1:], None
    return (rest[0] if rest else f"{HERE_DOCUMENT}\0{text}"), text, rest[1:], read_as


def _directives(unit, options: dict) -> tuple[list[str], list[tuple[str, str]]]:
    """The submit options as directive lines, and the variables they pass to the job."""
    lines, env = [], []
    for name, values in options.items():
        for value in values:
            if name == unit.export_option:  # a value the submitter's shell expands ($i of its loop) is not known here
                env += [tuple(item.split("=", 1)) for item in value.split(",") if "=" in item]
            else:
                lines.append(unit.directive_line(unit.format_option(name, value or None)))
    return lines, env


# A $NAME left in a submit line's argument: the submitter's shell expands it per submission (its loop's $i)
_SUBMITTERS = re.compile(r"\$([A-Za-z_]\w*)(?![\w{])|\$\{([A-Za-z_]\w*)\}")


def _given_names(word: str) -> list[str]:
    """The names of `word`'s plain $NAME/${NAME} references; none when it holds another expansion."""
    if word.count("$") != len(_SUBMITTERS.findall(word)):  # $(...), ${x:-y}: kept as written
        return []
    return [plain or braced for plain, braced in _SUBMITTERS.findall(word)]


def _argument(word: str) -> str:
    """A submit-line argument as a `set --` word of the job: the submitter's $NAME stays a reference,
    resolved from the variable given at submit time (Submitted.given), the rest quoted as it was."""
    if not _given_names(word):
        return shlex.quote(word)
    parts = _SUBMITTERS.sub(lambda m: f"\0{m.group(0)}\0", word).split("\0")  # literal, reference, ...
    return "".join(f'"{part}"' if i % 2 else shlex.quote(part) for i, part in enumerate(parts) if i % 2 or part)


def _expanded(item: str) -> bool:
    """`A=$i`, `B=$(date)`: sbatch --export gets the value the submitter's shell expanded, which
    varies with its loop or clock; the job reads $A as the outside world gives it."""
    return "$" in item or "`" in item


def _written_in(text: str, directives: list[str], setup: list[str]) -> str:
    """The script with the directives after its own (the last of each wins) and the set-up after them."""
    lines = text.split("\n")
    pattern = _directive_pattern()
    headers = [i for i, line in enumerate(lines) if pattern.fullmatch(line)]
    at = headers[-1] + 1 if headers else int(bool(lines) and lines[0].startswith("#!"))
    return "\n".join([*lines[:at], *directives, *setup, *lines[at:]])
