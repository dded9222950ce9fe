"""What the run backends (slurm.py, local.py) share: putting a mini-app in place of a launch
script's training program, describing its result line (parsed by maple_ci.miniapp_result), and
the result shape."""

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from pydantic import BaseModel, Field

from ..errors import MapleError
from ..extract import extract_script
from ..extract.launch import chain
from ..extract.shell import Command, Function, If, parse
from ..extract.walk import Shell
from ..paths import miniapps_dir
from .speed import Speed


class VerifyResult(BaseModel):
    """The outcome of one real run of a mini-app through a launch script."""

    ok: bool
    backend: str  # the name it has in verify.BACKENDS
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
    speed: Optional[Speed] = None  # bandwidth, step time, transport, program metrics (verify/speed.py)


def resolve_miniapp(miniapp: str) -> Path:
    """A mini-app by name ("ddp" -> miniapps/ddp.py, only ever the package's: a file `ddp` in the
    checkout is not it) or by a path with a slash (`./my_app.py`)."""
    path = Path(miniapp) if "/" in miniapp else miniapps_dir() / f"{miniapp}.py"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in miniapps_dir().glob("[!_]*.py")))
        raise MapleError(f"unknown mini-app {miniapp!r}; known mini-apps: {known}")
    path = path.resolve()
    # The path goes into shell lines, possibly inside a quoted `bash -c '...'`, where no quoting
    # of ours would survive; a path that needs none is required instead.
    if not re.fullmatch(r"[\w./+-]+", str(path)):
        raise MapleError(f"mini-app path {path} has characters a shell would need quoted; move it")
    return path


@dataclass
class Site:
    """Where a launch line runs the training program: from the program word (with a module's
    -m/--module flag) to the end of its arguments, and how the mini-app takes its place there."""

    start: int
    end: int
    line: int
    replacement_prefix: str  # "" after python/torchrun; "python " where the program ran as an executable


def _commands(nodes: list) -> Iterator[Command]:
    for node in nodes:
        if isinstance(node, Command):
            yield node
        elif isinstance(node, Function):
            yield from _commands(node.body)
        elif isinstance(node, If):
            for condition, body in node.branches:
                yield from _commands(condition)
                yield from _commands(body)
            yield from _commands(node.otherwise)


def program_sites(script: str, entrypoint: str, _offset: int = 0, _text: Optional[str] = None) -> list[Site]:
    """Each launch line that runs `entrypoint` (as the JobIntent names it) as a word of its own, at
    the program position the extractor's launch chain finds: after the launchers, wrappers and
    their options, or inside a `bash -c '...'` string whose text is exactly as written (quoted, no
    expansion in it); never inside a quoted argument or a variable."""
    text = script if _text is None else _text  # offsets and lines count in the whole script
    shell = Shell(None, None, {})  # nothing is read or looked up: the words as written
    sites = []
    for command in _commands(parse(script)):
        fields = [" ".join(shell.expand.fields(word)) for word in command.words]
        launch = _launch_of(fields, shell, entrypoint)
        if launch is None:
            continue
        position = _program_position(fields, launch)
        if position is None:
            sites += _in_command_string(command, fields, entrypoint, _offset, text)
            continue
        last = len(command.words) - 1
        start = _offset + command.starts[position]
        sites.append(Site(start, _offset + command.starts[last] + len(command.words[last]),
                          text.count("\n", 0, start) + 1, "" if _runs_python(launch) else "python "))
    return sites


def _launch_of(fields: list[str], shell: Shell, entrypoint: str):
    """The launch chain of a line when its program is `entrypoint`, else None."""
    try:
        launch = chain(fields, shell, [])
    except MapleError:  # a `bash -c` string bash rejects cannot hold the site either
        return None
    if launch is None or not launch.entry or not _names(launch.entry, entrypoint):
        return None
    return launch


def _program_position(fields: list[str], launch) -> Optional[int]:
    """The index of the program word (or its -m/--module flag) when the line's words end with the
    program and its arguments as written; None when it sits elsewhere (a `bash -c` string)."""
    position = len(fields) - len(launch.args) - 1
    if position < 0 or fields[position] != launch.entry.removeprefix("-m ") or fields[position + 1:] != launch.args:
        return None
    if launch.entry.startswith("-m ") and fields[position - 1] in ("-m", "--module"):
        return position - 1
    return position


def _runs_python(launch) -> bool:
    """python, and torchrun/deepspeed/accelerate without --no-python, run a .py given to them; a
    program started directly (`srun ./train.py`, `torchrun --no-python litgpt`) gets python."""
    return "python" in launch.names() or any(
        name in ("torchrun", "deepspeed", "accelerate") and "no_python" not in opts for name, opts in launch.stages)


def _in_command_string(command: Command, fields: list[str], entrypoint: str, offset: int, text: str) -> list[Site]:
    """Sites inside the string of `bash -c '...'` on this line, when the string reads exactly as
    written (so a position in it is a position in the script)."""
    for k in range(2, len(fields)):
        if _is_command_string(command.words[k], fields, k):
            return program_sites(fields[k], entrypoint, offset + command.starts[k] + 1, text)
    return []


def _is_command_string(raw: str, fields: list[str], k: int) -> bool:
    """Whether word k is the quoted string of `bash -c`/`sh -c`, reading exactly as written."""
    return (fields[k - 2].rsplit("/", 1)[-1] in ("bash", "sh") and re.fullmatch(r"-[a-z]*c[a-z]*", fields[k - 1]) is not None
            and raw[:1] in "'\"" and raw[-1:] == raw[:1] and raw[1:-1] == fields[k])


def logical_line_start(text: str, pos: int) -> int:
    """Start of the line holding pos, following backslash-newline continuations back."""
    start = text.rfind("\n", 0, pos) + 1
    while start >= 2 and text[start - 2] == "\\":
        start = text.rfind("\n", 0, start - 1) + 1
    return start


def _names(entry: str, entrypoint: str) -> bool:
    """Whether a launched program is `entrypoint` as the JobIntent names it (a path may be longer)."""
    return entry == entrypoint or entry.endswith("/" + entrypoint)


def substitute_entrypoint(script: str, miniapp: Path, entrypoint: Optional[str] = None) -> str:
    """The script with the mini-app in place of the training program on its one launch line, and
    that program's arguments dropped; everything else (directives, modules, env, the launcher and
    its flags, redirections) is kept. The program is `entrypoint` (as the JobIntent names it; by
    default what the extractor finds). Refused unless exactly one launch line runs it as a word
    of its own: then the mini-app, and nothing of the user's program, is what runs."""
    if not entrypoint:
        entrypoint = extract_script(script).entrypoint
        if not entrypoint:
            raise MapleError("no launch line running a training program (python/torchrun/deepspeed/"
                             "accelerate launch ... train.py or -m module) was found in the script")
    site = _only_site(program_sites(script, entrypoint), entrypoint)
    return script[:site.start] + site.replacement_prefix + str(miniapp) + script[site.end:]


def _only_site(sites: list[Site], entrypoint: str) -> Site:
    """The one site, or why there is not exactly one."""
    if len(sites) == 1:
        return sites[0]
    where = f" (lines {', '.join(str(site.line) for site in sites)})" if sites else ""
    raise MapleError(
        f"the script has {len(sites) or 'no'} launch line{'s' if len(sites) != 1 else ''} running {entrypoint!r} "
        f"as a word of its own{where}; verification replaces exactly one, so that only the mini-app runs "
        "(a program named inside a quoted string or a variable cannot be replaced safely)")


def prepared_script(text: str, miniapp: Optional[str], entrypoint: Optional[str]) -> tuple[str, str]:
    """The script a backend runs and the note that says what runs: `miniapp` in place of the
    training program, or with miniapp None (`maple verify --program`) the script as written."""
    if miniapp is None:
        return text, "the script's own program ran (--program), not a mini-app"
    return substitute_entrypoint(text, resolve_miniapp(miniapp), entrypoint), f"mini-app {miniapp} in place of the training program"


def passed(state: str, exit_code: Optional[int], result: Optional[dict], program: bool) -> bool:
    """A run passes when the job completed with exit 0 and, for a mini-app, its result line is ok."""
    return state == "COMPLETED" and exit_code == 0 and (program or bool(result and result.get("ok")))


def describe(result: Optional[dict], program: bool = False) -> str:
    """What the mini-app's result line says, for a message."""
    if program:
        return "the program's own run (no mini-app result line expected)"
    if result is None:
        return "the mini-app printed no result line"
    if result.get("ok"):
        return f"mini-app ok, world_size {result.get('world_size')}"
    return f"mini-app result not ok: {json.dumps(result)}"
