"""Applying a fix's edits to a script (pure, idempotent, line by line), and the diffs and
line-anchored review suggestions that show them."""

import difflib
import re
import shlex
from typing import Optional

from pydantic import BaseModel

from .. import schedulers
from ..errors import MapleError
from . import policy
from .kb import AddFlag, AddModule, ExportEnv, RemoveDirective, ReplaceFlag, ReplaceText, SetDirective, UnsetEnv

_SAFE_VALUE = re.compile(r"^[\w.:/@%+,=-]+$")


# {name} names a fact; ${NAME} is shell and stays as written.
_FIELD = re.compile(r"(?<!\$)\{([A-Za-z_]\w*)\}")


def fields_of_text(text) -> list[str]:
    return _FIELD.findall(text) if isinstance(text, str) else []


def fields_of(op) -> set[str]:
    """The {name} facts an op's values need."""
    return {n for k, v in op if k != "op" for n in fields_of_text(v)}


def _fill(template: str, context: dict, quote: bool = True) -> str:
    """Fill {name} fields from context; a value that is not a plain token is shell-quoted, except
    in replace_text (quote=False), whose text is the script's own and must match it as written."""
    missing = sorted({n for n in _FIELD.findall(template) if n not in context})
    if missing:
        raise MapleError(f"the fix needs {', '.join(missing)}, which neither the log nor the cluster profile gives")

    def value(m: re.Match) -> str:
        text = str(context[m[1]])
        plain = not quote or _SAFE_VALUE.match(text) or policy.PLACEHOLDER.fullmatch(text)
        return text if plain else shlex.quote(text)

    return _FIELD.sub(value, template)


def resolve(op, context: dict):
    quote = op.op != "replace_text"
    fields = {k: _fill(v, context, quote) if isinstance(v, str) and k != "op" else v for k, v in op}
    return type(op)(**fields)


# ---------------------------------------------------------------------------------------------
# Applying edits. Scripts are handled as lists of lines; every edit is a no-op when already done.

# A launch line: optional `time`/`exec`, optional VAR=value assignments, then the launcher.
_LAUNCH = re.compile(
    r"^\s*(?:(?:time|exec|nohup)\s+)?(?:\w+=\S*\s+)*"
    r"(?P<cmd>srun|mpiexec|mpirun|ibrun|aprun|jsrun|torchrun|deepspeed|accelerate|python3?)(?=\s|$)"
)
_MODULE_LINE = re.compile(r"^\s*(?:module|ml)\s")


_DIRECTIVE_OPS = ("set_directive", "remove_directive")


def same_option(a: str, b: str, op: str = "set_directive", scheduler: Optional[str] = None) -> bool:
    """Whether two spellings name one option: a directive as a scheduler that reads either spelling
    names it (the given scheduler's, else any registered one's: -A and --account are Slurm's
    account, "-l walltime" is PBS's walltime), a launcher flag with "-" for "_" (torchrun takes both)."""
    if op not in _DIRECTIVE_OPS:
        return a.replace("_", "-") == b.replace("_", "-")
    unit = schedulers.find(scheduler)
    units = [unit] if unit else schedulers.all()
    return a.strip() == b.strip() or any(u.canonical(a) == u.canonical(b) for u in units if u.knows(a) or u.knows(b))


def _unit(lines: list[str], context: dict):
    """The scheduler whose directives the script uses, else the cluster's (else Slurm's)."""
    return schedulers.detect("\n".join(lines)) or schedulers.get(context.get("scheduler") or "slurm")


_HOLE = "MAPLE_VALUE_TO_FILL"  # stands in for a <name> placeholder, which the writer would quote


def _set_directive(lines: list[str], op: SetDirective, context: dict) -> list[str]:
    # The scheduler's own writer: the option lands in the directive block, before the first
    # command (sbatch and qsub ignore directives after it), spelling and other options kept.
    # A placeholder is shown as written (a person fills it in), never quoted as a shell word.
    hole = bool(policy.PLACEHOLDER.fullmatch(op.value))
    text = _unit(lines, context).set_option("\n".join(lines), op.name, _HOLE if hole else op.value or None)
    return (text.replace(_HOLE, op.value) if hole else text).split("\n")


def _remove_directive(lines: list[str], op: RemoveDirective, context: dict) -> list[str]:
    return _unit(lines, context).remove_option("\n".join(lines), op.name).split("\n")


def _launch_lines(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if _LAUNCH.match(line)]


def _before_launch(lines: list[str], new: list[str]) -> list[str]:
    """Insert `new` right before the first launch line (at the end when there is none)."""
    launches = _launch_lines(lines)
    if launches:
        at = launches[0]
    else:  # after the last line with content, so a trailing newline stays the last thing
        at = max((i + 1 for i, line in enumerate(lines) if line.strip()), default=0)
    return lines[:at] + new + lines[at:]


def _loads(line: str, name: str) -> bool:
    """Whether a module line loads `name` (any version of it, when `name` gives none)."""
    loaded = line.split()[1:]
    return name in loaded or ("/" not in name and any(t.startswith(name + "/") for t in loaded))


_LOAD_LINE = re.compile(r"^\s*(?:module\s+(?:load|add)|ml)\s+")


def loaded_modules(script: str) -> set[str]:
    """The modules the script's `module load` (`module add`, `ml`) lines name, as written."""
    return {word for line in script.split("\n") if (m := _LOAD_LINE.match(line)) for word in line[m.end():].split()}


def _add_module(lines: list[str], op: AddModule, context: dict) -> list[str]:
    module_lines = [i for i, line in enumerate(lines) if _MODULE_LINE.match(line)]
    if any(_loads(lines[i], op.name) for i in module_lines):
        return lines
    if module_lines:
        at = module_lines[-1] + 1
        return lines[:at] + [f"module load {op.name}"] + lines[at:]
    return _before_launch(lines, [f"module load {op.name}"])


def _export_env(lines: list[str], op: ExportEnv, context: dict) -> list[str]:
    assign = re.compile(rf"^(?P<indent>\s*)export\s+{op.name}=")
    found = [i for i, line in enumerate(lines) if assign.match(line)]
    if not found:
        return _before_launch(lines, [f"export {op.name}={op.value}"])
    out = list(lines)
    for i in found:
        out[i] = f"{assign.match(lines[i])['indent']}export {op.name}={op.value}"
    return out


def _unset_env(lines: list[str], op: UnsetEnv, context: dict) -> list[str]:
    # The variable may come from a module, so the script's own exports go and an unset is added.
    assign = re.compile(rf"^\s*export\s+{op.name}=")
    out = [line for line in lines if not assign.match(line)]
    if any(re.match(rf"^\s*unset\s+(?:\w+\s+)*{op.name}\b", line) for line in out):
        return out
    return _before_launch(out, [f"unset {op.name}"])


def _flag_regex(flag: str) -> re.Pattern:
    # torchrun takes --nproc_per_node and --nproc-per-node; MPICH takes -ppn and --ppn.
    bare = flag.lstrip("-")
    spellings = {f"--{bare}", f"--{bare.replace('_', '-')}", f"--{bare.replace('-', '_')}", f"-{bare}", flag}
    names = "|".join(re.escape(s) for s in sorted(spellings, key=len, reverse=True))
    return re.compile(rf"""(?<!\S)(?:{names})(?P<sep>=|\s+)(?P<value>[^\s\\;|&"']+)""")


def _replace_flag(lines: list[str], op: ReplaceFlag, context: dict) -> list[str]:
    pattern = _flag_regex(op.flag)
    out, found = list(lines), False
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#"):
            continue
        if pattern.search(line):
            found = True
            out[i] = pattern.sub(lambda m: m.group(0)[: m.start("value") - m.start()] + op.value, line)
    if not found:
        raise MapleError(f"the script passes no {op.flag} to change")
    return out


# A container runtime started by a launcher ("srun apptainer exec ..."): its flags follow its verb.
_WRAPPED = re.compile(r"(?<!\S)(?P<cmd>apptainer|singularity)\s+(?:exec|run)(?=\s)")


def _launcher_end(line: str, launcher: str) -> Optional[int]:
    """Where `launcher`'s own flags start on a launch line, or None if it does not run there."""
    launch = _LAUNCH.match(line)
    if launch and launch["cmd"] == launcher:
        return launch.end("cmd")
    wrapped = _WRAPPED.search(line) if launch or line.lstrip().startswith(launcher) else None
    return wrapped.end() if wrapped and wrapped["cmd"] == launcher else None


def _flag_words(op: AddFlag) -> str:
    """The flag as the launcher takes it: --flag=value, -f value, or the bare flag."""
    if not op.value:
        return op.flag
    return f"{op.flag}={op.value}" if op.flag.startswith("--") else f"{op.flag} {op.value}"


def _last_launch_of(lines: list[str], launcher: str) -> Optional[int]:
    launches = [i for i, line in enumerate(lines) if not line.lstrip().startswith("#") and _launcher_end(line, launcher)]
    return launches[-1] if launches else None


def _add_flag(lines: list[str], op: AddFlag, context: dict) -> list[str]:
    i = _last_launch_of(lines, op.launcher)
    if i is None:
        raise MapleError(f"the script has no {op.launcher} line to add {op.flag} to")
    line = lines[i]
    existing = re.compile(rf"(?<!\S){re.escape(op.flag)}(?:(?P<sep>=|\s+)(?P<value>[^-\s]\S*))?(?=\s|$)")
    end = _launcher_end(line, op.launcher)
    m = existing.search(line, end)
    if m and (not op.value or m["value"] == op.value):
        return lines
    if m:
        new_line = line[: m.start()] + _flag_words(op) + line[m.end() :]  # e.g. --export=NONE -> --export=ALL
    else:
        new_line = f"{line[:end]} {_flag_words(op)}{line[end:]}"
    return lines[:i] + [new_line] + lines[i + 1 :]


def _outside(places: list[int], size: int, spans: list[int], span_size: int) -> bool:
    """Whether one of the `size`-long places lies outside every `span_size`-long span."""
    return any(not any(s <= p and p + size <= s + span_size for s in spans) for p in places)


def _replace_text(lines: list[str], op: ReplaceText, context: dict) -> list[str]:
    text = "\n".join(lines)

    def places(words: str) -> list[int]:  # whole words only: "hsn0" is not inside "hsn0,hsn1"
        return [m.start() for m in re.finditer(rf"(?<!\S){re.escape(words)}(?!\S)", text)]

    # Done already (new may contain old, e.g. a line added after it, so this check comes first),
    # or nothing to replace: the guard leaves the script as it is. A `new` inside an `old` is not
    # done ("#!/bin/bash" inside an indented "  #!/bin/bash").
    found = places(op.old)
    if not found or _outside(places(op.new), len(op.new), found, len(op.old)):
        return lines
    if len(found) > 1:
        raise MapleError(f"{op.old!r} occurs {len(found)} times in the script; the fix edits exactly one")
    at = found[0]
    return (text[:at] + op.new + text[at + len(op.old) :]).split("\n")


_APPLY = {
    "set_directive": _set_directive, "remove_directive": _remove_directive, "add_module": _add_module,
    "export_env": _export_env, "unset_env": _unset_env, "replace_flag": _replace_flag,
    "add_flag": _add_flag, "replace_text": _replace_text,
}  # fmt: skip


def apply_fix(script: str, ops: list, context: Optional[dict] = None) -> str:
    """The script with `ops` applied in order. Pure, deterministic and idempotent; lines no op
    addresses are left byte for byte. Raises MapleError when an op cannot apply: a value the fix
    needs is unknown, the policy refuses the edit (debug.policy), the script has no such launcher
    or flag, or a line to replace is ambiguous."""
    context = context or {}
    lines = script.split("\n")  # split, not splitlines: "\n".join restores the text exactly
    policy.check_fix(ops, _unit(lines, context))
    for op in ops:
        resolved = resolve(op, context)
        policy.check(resolved, _unit(lines, context) if resolved.op == "set_directive" else None)
        lines = _APPLY[resolved.op](lines, resolved, context)
    patched = "\n".join(lines)
    if why := policy.per_task_refusal(script, patched):
        raise MapleError(f"the fix may not be made: {why}")
    return patched


# ---------------------------------------------------------------------------------------------
# Diffs and review suggestions


def diff(old: str, new: str, path: str) -> str:
    out = []
    for line in difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


class Suggestion(BaseModel):
    """Replace lines start_line..line (1-based, inclusive, of the OLD file) with body. body is the
    replacement lines, each ending in a newline as in the new file; "" deletes the lines."""

    path: str
    start_line: int
    line: int
    body: str


def suggestions(old: str, new: str, path: str) -> list[Suggestion]:
    """Review suggestions that turn `old` into `new`, anchored on old lines. A pure insertion is
    anchored on the old line before it (or after it, at the top) and repeats that line."""
    a, b = old.splitlines(True), new.splitlines(True)
    hunks: list[list[int]] = []  # [a_start, a_end, b_start, b_end), half-open
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2:  # an insertion has no old line of its own: take a neighbour along
            if not a:
                raise MapleError(f"{path} is empty; there is no line to anchor a suggestion on")
            if i1 > 0:
                i1, j1 = i1 - 1, j1 - 1
            else:
                i2, j2 = i2 + 1, j2 + 1
        if hunks and i1 < hunks[-1][1]:  # overlaps the previous hunk through a shared anchor
            hunks[-1][1], hunks[-1][3] = max(hunks[-1][1], i2), max(hunks[-1][3], j2)
        else:
            hunks.append([i1, i2, j1, j2])
    return [Suggestion(path=path, start_line=i1 + 1, line=i2, body="".join(b[j1:j2])) for i1, i2, j1, j2 in hunks]


def apply_suggestions(old: str, items: list[Suggestion]) -> str:
    """What the old file becomes when every suggestion is committed (as GitHub does)."""
    lines = old.splitlines(True)
    for s in sorted(items, key=lambda s: s.start_line, reverse=True):
        lines[s.start_line - 1 : s.line] = s.body.splitlines(True)
    return "".join(lines)

