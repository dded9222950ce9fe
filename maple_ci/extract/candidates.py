"""When the program is not in the script: it comes from the job's arguments (`torchrun ...
"${@:6}"`, `srun "$@"`) or no launch was found. The note names Python programs of the checkout that
may be it and the exact option (or pull-request comment) that gives it, so a refusal has a next step."""

import re
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ..launchers.options import python_command
from .evaluate import PASS_THROUGH

if TYPE_CHECKING:
    from .walk import Shell

# `$1`, `${@:6}`, `"$@"`, `$*`: a program only the submit line names
_ARGUMENT = re.compile(r'"?\$\{?(?:@|\*|\d+)(?::\d+(?::\d+)?)?\}?"?')
_PYTHON = re.compile(r"python[\d.]*")
_LIKELY = re.compile(r"(?i)(train|main|run|finetune|pretrain|launch)")
_MAX_SHOWN = 6
_MAX_FILES = 2000  # a checkout's files looked at, bounded


def from_arguments(entry: Optional[str]) -> bool:
    return bool(entry) and (entry == PASS_THROUGH or bool(_ARGUMENT.fullmatch(entry)))


def no_program(shell: "Shell") -> str:
    """Why no launch runs a program: python given its program on its standard input (`srun python -
    <<EOF`; python(1): `-` or no script reads it from there), code the job script holds and a port
    has no file for; else none runs one."""
    for line, words, _ in [*shell.commands, *shell.inner]:
        at = next((i for i, word in enumerate(words) if _PYTHON.fullmatch(word.rsplit("/", 1)[-1])), None)
        runs = python_command(words[at + 1:])[1] if at is not None else None
        if runs is not None and runs[:1] in ([], ["-"]):
            return (f"python at line {line} reads its program from its standard input (a here-document or a pipe), "
                    "code the job script holds: save it as a file of the checkout")
    return "no launch line runs one"


def program_hint(root: Optional[Path], near: Optional[Path], why: str) -> str:
    """A note: why the program is unknown, the checkout's likely programs (those beside the script
    first), the option that gives it."""
    found = _programs(root, near)
    example = found[0] if found else "train.py"
    listed = f"programs in the checkout: {', '.join(found)}; " if found else "no Python program found in the checkout; "
    return (f"the program is not in the script ({why}): {listed}give it with --entrypoint '{example} ARGS' "
            f"(on a pull request, comment `/maple port --entrypoint '{example} ARGS'`)")


def _programs(root: Optional[Path], near: Optional[Path]) -> list[str]:
    if root is None or not root.is_dir():
        return []
    near = (near or root).resolve()
    ranked = sorted(_python_files(root), key=lambda path: (not path.resolve().is_relative_to(near),
                                                           not _LIKELY.search(path.name), len(path.parts), str(path)))
    # as the job names it: from the script's folder (where it runs) when the program is below it
    return [str(path.resolve().relative_to(near)) if path.resolve().is_relative_to(near) else str(path.relative_to(root))
            for path in ranked[:_MAX_SHOWN]]


def _python_files(root: Path) -> list[Path]:
    """The checkout's .py files (no hidden folders, no symlinks), the first _MAX_FILES found."""
    files = []
    for number, path in enumerate(root.rglob("*.py")):
        if number >= _MAX_FILES:
            break
        if not path.is_symlink() and not any(part.startswith(".") for part in path.relative_to(root).parts):
            files.append(path)
    return files
