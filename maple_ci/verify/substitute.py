"""What the run backends (slurm.py, local.py) share: putting a mini-app in place of a launch
script's training program, describing its result line (parsed by maple_ci.miniapp_result), and
the result shape."""

import json
import re
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, Field

from ..errors import MapleError
from ..paths import miniapps_dir


class VerifyResult(BaseModel):
    """The outcome of one real run of a mini-app through a launch script."""

    ok: bool
    backend: str  # "slurm", "local", "jacamar"
    job_id: Optional[str] = None  # None when the scheduler refused the script
    # As the scheduler or service names it: slurm and local give Slurm's job states (COMPLETED,
    # FAILED, NODE_FAIL, ...), REJECTED (sbatch refused) or TIMEOUT (maple-ci's own limit); jacamar
    # gives GitLab's lowercase pipeline statuses (success, failed, canceled, ...) or timeout.
    state: str
    exit_code: Optional[int] = None
    result: Optional[dict] = None  # the mini-app's MAPLE_MINIAPP_RESULT line, parsed
    log: str = ""  # the job's stdout and stderr (slurm: also sbatch's, and its JobState line, see verify_slurm)
    log_url: str = ""  # where a person can read the log (a CI pipeline page), when it lives elsewhere
    message: str  # one paragraph for a person: what happened and why it failed
    notes: list[str] = Field(default_factory=list)  # what the backend changed or emulated


def resolve_miniapp(miniapp: str) -> Path:
    """A mini-app by name ("ddp" -> miniapps/ddp.py) or by path."""
    path = Path(miniapp)
    if not path.is_file():
        path = miniapps_dir() / f"{miniapp}.py"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in miniapps_dir().glob("[!_]*.py")))
        raise MapleError(f"unknown mini-app {miniapp!r}; known mini-apps: {known}")
    path = path.resolve()
    # The path goes into shell lines, possibly inside a quoted `bash -c '...'`, where no quoting
    # of ours would survive; a path that needs none is required instead.
    if not re.fullmatch(r"[\w./+-]+", str(path)):
        raise MapleError(f"mini-app path {path} has characters a shell would need quoted; move it")
    return path


# The training program on a launch line: a word ending in .py, bare or in double quotes (synthesis
# writes "$SCRATCH/train.py" for a plain $VAR expansion), or a module run with -m/--module (python,
# torchrun, deepspeed and accelerate launch all take the flag). The whole match is replaced, so the
# quotes and the flag go too.
_PROGRAM = re.compile(
    r"""(?<=[\s'"])(?:"(?P<quoted>[\w./${}~-]+\.py)"|(?P<bare>[\w./${}~-]+\.py)|(?:-m|--module)\s+(?P<module>[\w.]+))"""
    r"""(?=[\s'";)]|$)""")
# The launchers that run a program: python, torchrun, `python -m torch.distributed.run`, deepspeed,
# `accelerate launch`.
_LAUNCHER = re.compile(r"(?:^|[\s'\"/])(?:python[\d.]*|torchrun|torch\.distributed\.run|deepspeed|accelerate\s+launch)\s")
# Modules that are launchers, not training programs: `python -m torch.distributed.run train.py`.
_LAUNCHER_MODULES = {"torch.distributed.run", "torch.distributed.launch", "deepspeed.launcher.runner",
                     "accelerate.commands.launch"}


def _program_name(match: re.Match) -> str:
    """The program as JobIntent.entrypoint names it: the path, or "-m pkg.mod" for a module."""
    return f"-m {match['module']}" if match["module"] else match["quoted"] or match["bare"]


def logical_line_start(text: str, pos: int) -> int:
    """Start of the line holding pos, following backslash-newline continuations back."""
    start = text.rfind("\n", 0, pos) + 1
    while start >= 2 and text[start - 2] == "\\":
        start = text.rfind("\n", 0, start - 1) + 1
    return start


def _enclosing_quote(prefix: str) -> Optional[str]:
    """The quote character open at the end of prefix (a `bash -c '...'` string), if any."""
    quote, i = None, 0
    while i < len(prefix):
        char = prefix[i]
        if char == "\\" and quote != "'":
            i += 2
            continue
        if quote is None and char in "'\"":
            quote = char
        elif char == quote:
            quote = None
        i += 1
    return quote


def _arguments_end(text: str, pos: int, quote: Optional[str]) -> int:
    """Where the program's arguments starting at pos end: at the end of the (continued) line, at
    the quote that closes an enclosing `bash -c '...'`, or at a shell operator (; & | < > and
    redirections like 2>). Returns the end of the last argument, so what follows is kept."""
    end, i = pos, pos
    while i < len(text):
        char = text[i]
        if char == "\\" and text[i + 1 : i + 2] == "\n":  # continuation: the command goes on
            i += 2
        elif char == "\n" or char == quote or (quote is None and char in ";&|<>)#"):
            break
        elif char in " \t":
            i += 1
        elif quote is None and re.match(r"\d+[<>]", text[i:]):
            break
        else:  # one argument, with any quoted parts inside it
            while i < len(text) and text[i] not in " \t\n" and text[i] != quote:
                if quote is None and text[i] in "'\"":
                    i = text.index(text[i], i + 1) + 1 if text[i] in text[i + 1 :] else len(text)
                elif quote is None and text[i] in ";&|<>":
                    break
                else:
                    i += 1
            end = i
    return end


def launched_programs(script: str) -> list[tuple[re.Match, Optional[str]]]:
    """Each training program a launcher runs in the script, in order: (its match, the quote of an
    enclosing `bash -c '...'` if any). Comments and launcher modules are not programs."""
    launches = []
    for match in _PROGRAM.finditer(script):
        line_start = logical_line_start(script, match.start())
        prefix = script[line_start : match.start()]
        if prefix.lstrip().startswith("#") or not _LAUNCHER.search(prefix.replace("\\\n", " ")):
            continue
        if match["module"] in _LAUNCHER_MODULES:
            continue
        launches.append((match, _enclosing_quote(prefix)))
    return launches


def runs(match: re.Match, entrypoint: str) -> bool:
    """Whether a launched program is `entrypoint` as the JobIntent names it (a path may be longer)."""
    name = _program_name(match)
    return name == entrypoint or name.endswith("/" + entrypoint)


def substitute_entrypoint(script: str, miniapp: Path, entrypoint: Optional[str] = None) -> str:
    """The script with the mini-app in place of the training program on every launch line that runs
    it, and that program's arguments dropped. Everything else (directives, modules, env, the
    launcher and its flags, what follows the arguments) is kept. The program is `entrypoint` when
    given (as the JobIntent names it), else the one on the last launch line."""
    launches = launched_programs(script)
    if not launches:
        raise MapleError("no launch line running a Python training program (python/torchrun/deepspeed/"
                         "accelerate launch ... train.py or -m module) was found in the script")
    program = _program_name(launches[-1][0])
    if entrypoint:
        named = [_program_name(m) for m, _ in launches if runs(m, entrypoint)]
        if not named:
            raise MapleError(f"the script has no launch line running {entrypoint!r}")
        program = named[-1]
    pieces, done = [], 0
    for match, quote in launches:
        if _program_name(match) == program:
            pieces += [script[done : match.start()], str(miniapp)]
            done = _arguments_end(script, match.end(), quote)
    return "".join(pieces) + script[done:]


def describe(result: Optional[dict]) -> str:
    """What the mini-app's result line says, for a message."""
    if result is None:
        return "the mini-app printed no result line"
    if result.get("ok"):
        return f"mini-app ok, world_size {result.get('world_size')}"
    return f"mini-app result not ok: {json.dumps(result)}"
