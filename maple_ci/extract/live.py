"""Values static reading does not know in the launch's words (issue 25, "right or loud"): bash on
the target works them out as on the source where the port carries what they read (the loop that
repeats the launch, the arrays its words index), and the port's header names each one it cannot.

From bash(1): "Looping Constructs" (a `for` loop's variable takes each word of its list in turn,
`for ((init; test; step))` counts, `while read NAME` takes each line of its input); "Arrays" (a
subscript is arithmetic, worked out when the element is read: `${A[$SLURM_ARRAY_TASK_ID]}` names an
element only the job knows); "Shell Parameter Expansion".
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

from .branches import RUN_TIME_VALUE
from .builtins import let_values
from .arith import arith
from .shell import Loop

if TYPE_CHECKING:
    from .launch import Launch
    from .walk import Shell

MAX_VALUES = 64  # a loop with more values than this is named, not written out
_PLAIN = re.compile(r"[A-Za-z0-9_.,:/=+@%-]+")  # a loop value bash reads as itself, in a list or a subscript
_COMPARE = re.compile(r"\s*(.+?)\s*(<=|>=|==|!=|<|>)\s*(.+?)\s*")
_COMPARISONS = {"<=": int.__le__, ">=": int.__ge__, "==": int.__eq__, "!=": int.__ne__, "<": int.__lt__, ">": int.__gt__}
_ELEMENT = re.compile(r"\$\{([A-Za-z_]\w*)\[")  # ${NAME[...]}: an element of an array
_NAME = re.compile(r"\$\{?([A-Za-z_]\w*)")


def loops(launch: Optional["Launch"], shell: "Shell") -> tuple[list[list[str]], list[str]]:
    """(the loops the port carries around its launch, each [NAME, value...] outermost first; notes naming
    the launch's loops it cannot carry). A loop whose values only the job knows is named, and then none
    is carried: the port runs the launch once."""
    if launch is None or not launch.loops:
        return [], []
    found = [(loop, loop_values(loop, shell)) for loop in launch.loops]
    if all(values is not None for _, values in found):
        return [values for _, values in found], []
    words = " ".join([launch.entry or "", *launch.args])[:160]
    shown = "; ".join(_described(loop, values) for loop, values in found)
    names = [name for loop, _ in found if (name := _variable(loop))]
    empty = f", where {', '.join(names)} {'is' if len(names) == 1 else 'are'} empty" if names else ""
    return [], [f"the source runs its launch (`{words}`) inside a loop ({shown}), once per pass; the port runs it "
                f"once{empty}: run the port once per pass, or write the loop around the port's launch"]


def _variable(loop: Loop) -> Optional[str]:
    """The variable a loop sets each pass (`for NAME in`, `while read NAME`); None for `while true`."""
    if loop.keyword in ("for", "select") and loop.words and not loop.words[0].startswith("(("):
        return loop.words[0]
    reads = [c.words for c in loop.condition if c.words[:1] == ["read"]]
    names = [w for w in reads[0][1:] if re.fullmatch(r"[A-Za-z_]\w*", w)] if reads else []
    return names[-1] if names else None


def repeated(launch: "Launch", shell: "Shell") -> str:
    """How a loop repeats a launch the port does not run, with the words each pass gives its program
    (`, once per value of algo: ring ringX, as --config=p_ring, --config=p_ringX`); '' outside a loop."""
    found = [loop_values(loop, shell) for loop in launch.loops]
    if not found or None in found or len(found) > 1:
        return ""
    name, values = found[0][0], found[0][1:]
    reading = re.compile(rf"\$(?:{name}\b|\{{{name}\}})")
    words = [word for word in launch.args if reading.search(word)]
    shown = ", ".join(reading.sub(value, word) for value in values[:8] for word in words)
    return f", once per value of {name}: {' '.join(values)}" + (f", as {shown}" if shown else "")


def _described(loop: Loop, values: Optional[list[str]]) -> str:
    if values is not None:
        return f"line {loop.line}: {values[0]} in {' '.join(values[1:])}"
    return f"line {loop.line}: `{loop.keyword} {_header(loop)[:80]}`, whose passes only the job knows"


def loop_values(loop: Loop, shell: "Shell") -> Optional[list[str]]:
    """[NAME, value...] a loop gives its variable, when the script knows each value and each is a
    plain word; None otherwise."""
    if loop.keyword in ("for", "select") and len(loop.words) == 1 and loop.words[0].startswith("(("):
        found = _counted(loop.words[0][2:-2], shell)
    elif loop.keyword == "for" and len(loop.words) >= 2 and loop.words[1] == "in":
        values = [field for word in loop.words[2:] for field in _sequence(word, shell) or shell.expand.fields(word)]
        found = [loop.words[0], *values]
    elif loop.keyword == "while":
        found = _read_lines(loop, shell)
    else:
        return None
    plain = found and re.fullmatch(r"[A-Za-z_]\w*", found[0]) and len(found) <= MAX_VALUES + 1 \
        and all(_PLAIN.fullmatch(value) for value in found)
    return found if plain else None


def _sequence(word: str, shell: "Shell") -> Optional[list[str]]:
    """`$(seq LAST)`, `$(seq FIRST LAST)`, `$(seq FIRST INCREMENT LAST)`: the integers seq(1) prints
    (GNU coreutils manual, "seq: Print numeric sequences"), where the script knows the bounds; else None."""
    match = re.fullmatch(r"\$\(\s*seq\s+([^()`]*)\)|`\s*seq\s+([^()`]*)`", word)
    bounds = [field for part in (match.group(1) or match.group(2)).split() for field in shell.expand.fields(part)] \
        if match else []
    if not 1 <= len(bounds) <= 3 or not all(re.fullmatch(r"-?\d+", bound) for bound in bounds):
        return None
    numbers = [int(bound) for bound in bounds]
    first, step, last = {1: (1, 1, *numbers), 2: (numbers[0], 1, numbers[-1]), 3: tuple(numbers)}[len(numbers)]
    if step == 0 or (last - first) // step > MAX_VALUES:
        return None
    return [str(n) for n in range(first, last + (1 if step > 0 else -1), step)]


def _counted(header: str, shell: "Shell") -> Optional[list[str]]:
    """`for ((i=0; i<N; i++))`: the values of its variable, where the script knows the bounds."""
    parts = header.split(";")
    if len(parts) != 3 or not (start := let_values(parts[0], shell.lookup)):
        return None
    name = next(iter(start))
    values, current = [], dict(start)
    while len(values) <= MAX_VALUES:
        held = _holds(parts[1], lambda n: current.get(n, shell.lookup(n)))
        if held is None:
            return None
        if not held:
            return [name, *values]
        values.append(current[name])
        current.update(let_values(parts[2], lambda n: current.get(n, shell.lookup(n))))
    return None


def _holds(test: str, lookup) -> Optional[bool]:
    if not test.strip():
        return True  # `for ((;;))`: runs until it breaks, more values than are written out
    match = _COMPARE.fullmatch(test)
    if match is None:
        value = arith(test, lookup)
        return None if value is None else value != 0
    left, right = arith(match.group(1), lookup), arith(match.group(3), lookup)
    return None if left is None or right is None else _COMPARISONS[match.group(2)](left, right)


def _read_lines(loop: Loop, shell: "Shell") -> Optional[list[str]]:
    """`while read [-r] NAME; do ...; done <<< "$LIST"` (or a here-document): NAME takes each line,
    its blanks trimmed (one name: the whole line)."""
    if len(loop.condition) != 1:
        return None
    words = [w for w in loop.condition[0].words if w != "-r"]
    if len(words) != 2 or words[0] != "read" or not re.fullmatch(r"[A-Za-z_]\w*", words[1]):
        return None
    text = _input(loop, shell)
    return None if text is None else [words[1], *(line.strip() for line in text.splitlines() if line.strip())]


def _input(loop: Loop, shell: "Shell") -> Optional[str]:
    strings = [target for op, target in loop.redirects if op == "<<<"]
    if strings:
        value = shell.expand.string(strings[-1])
        return None if "$" in value or "`" in value else value
    if loop.heredoc is not None:
        body, expands = loop.heredoc
        text = shell.expand.text(body) if expands else body
        return None if expands and ("$" in text or "`" in text) else text
    return None


def arrays(words: list[str], shell: "Shell") -> dict[str, list[str]]:
    """The script's arrays whose elements the launch's words read with an index only the job knows
    (`${CONFIGS[$SLURM_ARRAY_TASK_ID % 8]}`): the port writes them before its launch."""
    names = {name for word in words for name in _ELEMENT.findall(word)}
    return {name: list(shell.vars[name]) for name in sorted(names) if isinstance(shell.vars.get(name), list)}


def unknown_notes(words: list[str], shell: "Shell") -> list[str]:
    """Notes naming each word that reads one of the script's own variables whose value only the job knows
    (`$(...)`, or branches that set it from the job's values): the port does not run the line that sets it."""
    notes = []
    carried = arrays(words, shell)
    for name in sorted({n for word in words for n in _NAME.findall(word)} - set(carried)):
        value = shell.vars.get(name)
        element = any(f"${{{name}[" in word for word in words)  # an array the port cannot write out
        if not isinstance(value, str) or (shell.lookup(name) is not None and not element):
            continue
        used = " ".join(word for word in words if re.search(rf"\$\{{?{name}\b", word))[:120]
        notes.append(f"`{used}` reads ${name}, which the source sets {_how(name, value, shell)}; the port does not "
                     f"run that line, so ${name} is empty there unless you set it before the launch")
    return notes


def _how(name: str, value: str, shell: "Shell") -> str:
    """Where and how the script sets a variable whose value only its job knows."""
    where = f"at line {shell.assigned[name]} " if name in shell.assigned else ""
    if name in shell.looped:
        loop = shell.looped[name][0][-1]
        return f"{where}in the loop at line {loop.line} (`{loop.keyword} {_header(loop)[:60]}`), whose passes only its job knows"
    if value == RUN_TIME_VALUE:
        shown = ", ".join(f"`{each[:60]}`" for each in shell.candidates.get(name, [])[:4] if each != RUN_TIME_VALUE)
        return f"{where}in branches that test what only its job knows" + (f" (to {shown})" if shown else "")
    return f"{where}from what only its job knows (`{value[:80]}`)"


def _header(loop: Loop) -> str:
    return " ".join(loop.words) if loop.words else " ".join(w for c in loop.condition for w in c.words)
