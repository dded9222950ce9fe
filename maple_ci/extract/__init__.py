"""Extraction agent: turn a launch script, or a request written in words, into a JobIntent.

A script is read the way the scheduler and the shell read it, in these steps (one module each):
  directives  #SBATCH/#PBS lines up to the first command: size, walltime, account, queue
  shell       bash's grammar: simple commands with their words as written, functions, here-documents
  evaluate    bash's expansion rules: quotes, $VAR and ${VAR:-x}, arrays, "$@", $(( )), splitting
  walk        the script run in the mind: assignments, exports, functions, eval, sourced files
  launch      the launch chain: srun -> apptainer -> wrapper -> torchrun -> train.py
  script      counts, framework, strategy and configs, into a JobIntent
  request     a request in words ("train ViT with torchrun on 8 GPUs across two nodes")
Nothing in a script is ever executed, and every file it names is read inside the checkout only.
What only the job knows (a size chosen at submit time, $SCRATCH) stays unknown or as written; the
one fact a port cannot do without (the program) goes to `missing`, and the bot asks for it.
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache
from pathlib import Path
from typing import Optional

from .. import schedulers
from ..errors import MapleError
from ..files import MAX_SOURCE_BYTES, checkout_root, read_text
from ..launchers.options import python_command
from .directives import pbs_walltime, slurm_walltime
from .request import extract_request
from .script import RENDEZVOUS_VARS, extract_script

__all__ = ["MAX_SOURCE_BYTES", "RENDEZVOUS_VARS", "extract", "extract_request", "extract_script", "load_source",
           "pbs_walltime", "program_line", "read_script", "slurm_walltime"]

# ---------------------------------------------------------------------------------------------
# Reading the input


# One word naming a script (a folder in it, or a script suffix) was meant as a file, not a request.
_LOOKS_LIKE_PATH = re.compile(r"\S*/\S*|\S+\.(?:sh|bash|sbatch|slurm|pbs|qsub|job|batch)")


def load_source(arg: str) -> tuple[str, str]:
    """(name, text) of a script file, or of `arg` itself when it is not an existing path."""
    path = Path(arg)
    try:
        exists = "\n" not in arg and path.exists()
    except (OSError, ValueError):  # a long request or one with odd characters is not a path
        exists = False
    if not exists:
        if _LOOKS_LIKE_PATH.fullmatch(arg):
            raise MapleError(f"no such file: {arg}")
        _check_text(arg, "the input text")
        return "<text>", arg
    text = read_script(path, arg)
    from ..skypilot import is_task, script_view  # a SkyPilot task is read as the script it runs

    return arg, script_view(text, arg) if is_task(text, arg) else text


def read_script(path: Path, name: str) -> str:
    """The text of a launch script file the user named, refused with a clear error when it is a
    directory, a device, too large, binary or not UTF-8. `name` is how messages call it."""
    return read_text(path, name)


def _check_text(text: str, what: str) -> None:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        raise MapleError(f"{what} is larger than the {MAX_SOURCE_BYTES // 1024} KiB limit")
    if "\0" in text:
        raise MapleError(f"{what} contains NUL bytes; give a text launch script or request")


_LAUNCH_LINE = re.compile(
    # after a command list's earlier commands too (`cd src && python x.py`, `export A=0; python x.py`: bash(1) Lists)
    r"^(?:[^\n;&|]*(?:&&|;|\|\|))?[ \t]*(?:\w+=\S*[ \t]+)*"
    r"(?:srun|mpiexec|mpirun|ibrun|torchrun|deepspeed|accelerate[ \t]+launch|python[\d.]*)[ \t]"
    r"(?=(?:[^\n\\]|\\.|\\\n)*?(?:\s-|\.py\b))",  # on the line or its `\`-continued lines
    re.M,
)
# Under re.M, `^\s*` would run on over every blank line below each line start (quadratic): the
# blanks at a line's start are [ \t]*.


@lru_cache(maxsize=1)
def _script_hint() -> re.Pattern:
    """A shebang, any scheduler's directive line, or a line that submits a job (`bsub -n 4 python
    train.py` with no shebang is a script, not a request in words)."""
    units = schedulers.all()
    prefixes = "|".join(re.escape(unit.prefix) for unit in units)
    submits = "|".join(r"[ \t]+".join(map(re.escape, unit.submit)) for unit in units if unit.submit)
    return re.compile(rf"\A#!|^[ \t]*(?:{prefixes})\s|^[ \t]*(?:\w+=\S*[ \t]+)*(?:\S*/)?(?:{submits})[ \t]", re.M)
# "accelerate launch train.py on two nodes": a command quoted inside a sentence is a request
_PROSE = re.compile(r"\b(?:on|across|with|using|over|for)\s+(?:[\w-]+\s+){0,2}"
                    r"(?:nodes?|gpus?|servers?|machines?|hours?|minutes?)\b", re.I)


def extract(text: str, name: str = "<text>", base_dir: Optional[str | Path] = None,
            root: Optional[str | Path] = None):
    """JobIntent of a launch script or of a request in words, whichever `text` is.

    Files a script names are looked up from `base_dir` (by default the script's folder) and read
    only inside `root` (by default the git checkout holding the script, else its folder)."""
    _check_text(text, name)
    one_line_prose = "\n" not in text.strip() and _PROSE.search(text)
    if _script_hint().search(text) or (_LAUNCH_LINE.search(text) and not one_line_prose):
        if base_dir is None and name != "<text>" and Path(name).is_file():
            base_dir = Path(name).parent
        # absolute, so that the walk's paths relative to the root hold from any working directory
        base_dir = Path(base_dir).resolve() if base_dir is not None else None
        if root is None and base_dir is not None:
            root = checkout_root(base_dir / "script")
        return extract_script(text, base_dir, name, Path(root).resolve() if root is not None else None)
    return extract_request(text)


def program_line(entrypoint: Optional[str], program_args: Optional[str]) -> tuple[Optional[str], Optional[list[str]]]:
    """(program, its arguments) from the user's `--entrypoint 'train.py --config x'` (a command line,
    as a shell splits it; `python` in front is dropped, `-m pkg.mod` kept as one) and
    `--program-args '...'`, which follow it; None for what the user did not give."""
    def words(text: str, option: str) -> list[str]:
        try:
            return shlex.split(text)
        except ValueError as exc:
            raise MapleError(f"{option}: {exc}") from exc

    extra = words(program_args, "--program-args") if program_args is not None else None
    if entrypoint is None:
        return None, extra
    line = words(entrypoint, "--entrypoint")
    if line and re.fullmatch(r"python[\d.]*", line[0].rsplit("/", 1)[-1]):
        line = python_command(line[1:])[1]
    if line[:1] == ["-m"] and len(line) > 1:
        line = [f"-m {line[1]}", *line[2:]]
    if not line:
        raise MapleError("--entrypoint: give the program, e.g. train.py or '-m pkg.train --config x'")
    given = len(line) > 1 or extra is not None
    return line[0], [*line[1:], *(extra or [])] if given else None
