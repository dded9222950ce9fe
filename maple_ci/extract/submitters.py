"""A job script with no directives of its own, submitted by another file of the checkout
(`sbatch -N 2 -t 1:00:00 --gres=gpu:4 jobs/train.sh` in submit.sh): the submit line's options are
the job's size, as sbatch and qsub read them ("options on the command line override the same options
in the script", https://slurm.schedmd.com/sbatch.html; qsub(1) of PBS Professional reads its
options the same way; both read 2026-11-29). The submitter's line is read as a submit line is
(extract/submit.py) and written into the job's text as directives; the port's note names it.

The search is bounded (files, bytes, lines) and reads text only inside the checkout; a submit line
whose options or path hold values only its shell knows (`-N $NODES`) is not guessed at, and two
submitters that disagree leave the job as written with a note.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Optional

from .. import schedulers
from ..errors import MapleError
from ..files import read_inside
from ..launchers import parse_options
from .submit import submitted

MAX_FILES = 5000  # file entries looked at in one checkout: a repository's scripts, not its data
MAX_BYTES = 256 * 1024  # a submitter is a script, never larger than this
_SUFFIXES = {"", ".sh", ".bash", ".slurm", ".sbatch", ".pbs", ".qsub", ".job", ".lsf", ".flux", ".cmd"}
_OPERATOR = re.compile(r"[;&|()]+")  # the shell's control operators, alone or run together (`)&&`)


def with_submitter(text: str, script: Path, root: Path) -> tuple[str, Optional[str]]:
    """(the job's text with its submitter's options written in, the note) for a script with no
    directives that one submit line of the checkout submits; (text, None) when there is none,
    and (text, a note) when they disagree or cannot be read."""
    if schedulers.detect(text) is not None:
        return text, None
    found, unread = {}, []
    for submitter, number, argv in _submit_lines(script, root):
        where = f"{submitter.relative_to(root)} (line {number})"
        argv, variable = _readable(argv)
        named = []  # the submit line names this script (not another file, nor one outside the checkout)
        job = argv and submitted([(argv, None)], lambda path, at=submitter.parent: _same(path, at, root, script, text, named))
        if named and variable:
            unread.append(f"{where}: {' '.join(variable)}")
        if job and named and job.text != text:
            found.setdefault(job.text, (where, job.line))
    return _chosen(text, found, unread)


def _readable(argv: list[str]) -> tuple[list[str], list[str]]:
    """(the submit line without the options whose value its own shell sets (`-N $n`, `--job-name=$1$i`),
    those options): the variables it exports (`--export=A=$i`) are read as extract/submit.py reads them.
    A line whose script path is a variable is not read at all."""
    unit = schedulers.by_submit(argv)
    options, rest = parse_options(argv[len(unit.submit):], unit.spec)
    if not rest or _variable(rest[0]):
        return [], []
    kept, variable = [], []
    for name, values in options.items():
        for value in values:
            words = unit.format_option(name, value or None)
            (variable if name != unit.export_option and _variable(value) else kept).extend(words)
    return [*unit.submit, *kept, *rest], variable


def _variable(word: str) -> bool:
    return "$" in word or "`" in word


def _chosen(text: str, found: dict, unread: list[str]) -> tuple[str, Optional[str]]:
    if len(found) == 1:
        job_text, (where, line) = next(iter(found.items()))
        return job_text, (f"the script has no directives; {where} submits it (`{line}`): its options are the "
                          "job's size and time, written in as directives" + _also(unread))
    if found:
        named = "; ".join(f"{where}: `{line}`" for where, line in found.values())
        return text, (f"the script has no directives and is submitted with different options ({named}); "
                      "the port does not choose between them: give --nodes/--gpus-per-node/--walltime")
    if unread:
        return text, (f"the script has no directives; its submit line sets options from variables maple does not "
                      f"read ({'; '.join(unread)}): give --nodes/--gpus-per-node/--walltime where they size it")
    return text, None


def _also(unread: list[str]) -> str:
    return f"; not read, as its shell sets them per submission: {'; '.join(unread)}" if unread else ""


def _same(path: str, at: Path, root: Path, script: Path, text: str, named: list) -> Optional[str]:
    """The job's text when `path`, as the submitter names it from its folder or the checkout's root
    (where a submit line is run from), is the script."""
    for folder in (at, root):
        if Path(os.path.normpath(folder / path)) == script:
            named.append(path)
            return text
    return None


def _submit_lines(script: Path, root: Path):
    """(file, line number, words from the submit command on) of each line of the checkout's
    scripts that names the script's file name after a submit command."""
    mention = re.compile(rf"(?<![\w.-]){re.escape(script.name)}(?![\w.-])")
    for path in _scripts(root, script):
        try:
            text = read_inside(root, path, limit=MAX_BYTES)
        except MapleError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if mention.search(line) and (argv := _submit_words(line)):
                yield path, number, argv


def _submit_words(line: str) -> Optional[list[str]]:
    """The words of the line's submit command, up to the next shell operator; None if it has none."""
    try:  # `JOB=$(sbatch ... job.sh)`: the substitution's command is a command of its own
        words = shlex.split(re.sub(r"\$\(|`", " ; ", line), comments=True)
    except ValueError:
        return None
    words = [part for word in words for part in re.split(r"([;&|)]+)$", word) if part]  # `job.sh;`, `job.sh)`
    for i in range(len(words)):
        if schedulers.by_submit(words[i:]) is not None:
            end = next((j for j in range(i, len(words)) if _OPERATOR.fullmatch(words[j])), len(words))
            return words[i:end]
    return None


def _scripts(root: Path, script: Path):
    """The checkout's script-like files other than `script`, hidden folders skipped; the walk stops
    after MAX_FILES entries, folders and files, scripts or not (a checkout holding a data set ends it early)."""
    seen = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        seen += len(dirs)
        for name in sorted(files):
            seen += 1
            if seen > MAX_FILES:
                return
            path = Path(folder) / name
            if path.suffix in _SUFFIXES and path != script and not path.is_symlink():
                yield path
