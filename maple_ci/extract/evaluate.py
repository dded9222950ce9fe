"""Bash's expansion rules, applied to a script without running it.

A word is expanded the way bash would: quotes removed, `$VAR`, `${VAR:-x}`, arrays and `"$@"`,
`$(( ))`, and unquoted expansions split into several words. What the script itself sets is
known; what only the environment or the scheduler knows stays as written (`$SCRATCH/data`), so
a field is always the script's own values plus untouched references to the outside world.

Counts are a second step: `resolve` expands a field once more with the scheduler's variables that
the directives fix (SLURM_NNODES for `#SBATCH -N 2`) and the node count behind `wc -l <
$PBS_NODEFILE`; a count that still depends on something unknown is None (decided at submit time).
Nothing is ever executed: command substitution is understood only in the few forms that count
or print (wc -l, echo, expr, basename), and otherwise stays as written.
"""

from __future__ import annotations

import re
from typing import Callable, Optional

from .arith import Lookup, arith
from .braces import expand_braces
from .budget import Budget, trim
from .lexer import closing

# Names whose value comes from the scheduler or launcher: a default written beside them is what
# bash gives outside a job, not what the job sees, so it never stands in for the value.
RUNTIME_NAME = re.compile(r"(?:SLURM|PBS|PALS|PMI|PMIX|OMPI|MPI|FLUX|LSB|COBALT)_\w*|CUDA_VISIBLE_DEVICES")
_PARAM = re.compile(r"(#)?(!)?([A-Za-z_]\w*|\d+|[@*#?$!])(?:\[([^\]]*)\])?(.*)", re.S)
NODES = "__nodes__"  # the allocation's node count in a lookup, for `scontrol show hostnames ... | wc -l`
# Lines of $PBS_NODEFILE: one per rank slot (select's mpiprocs, Torque's ppn), so `wc -l` counts
# ranks there unless the script takes unique hosts first (`sort -u`, `uniq`).
NODEFILE_LINES = "__nodefile_lines__"
DEVICES = "__devices__"  # the devices each node of the job holds, where its directives say (a launcher that counts them)
# The job's own arguments (`sbatch job.sh --config=mp`), passed on to the program by "$@", $*,
# args="${@}": unknown until submit time, so kept as the one word that passes them on.
PASS_THROUGH = '"$@"'


class Written(str):
    """An expansion only the job can do, as the job's bash should see it: `${A[$SLURM_ARRAY_TASK_ID % 8]}`
    with the script's own values put in its subscript (bash(1) "Arrays": the subscript is arithmetic)."""


class Expander:
    """Expands words against `lookup`; unknown parts are kept as written."""

    def __init__(self, lookup: Lookup, runtime: bool = False, budget: Optional[Budget] = None,
                 output_of: Callable[[str], Optional[str]] = lambda command: None):
        self.lookup = lookup
        self.output_of = output_of  # what a command of the script's own prints (`$(my_function a b)`)
        self.runtime = runtime  # resolving counts: scheduler names are looked up, never defaulted
        self.budget = budget or Budget()  # what expanding may produce (a script's walk shares one)

    # -- whole words ----------------------------------------------------------------------------

    def fields(self, raw: str, split: bool = True) -> list[str]:
        """The words bash would pass for `raw`: quotes removed, expansions done, unquoted ones split
        (not in an assignment's value: `split=False`)."""
        if whole := re.fullmatch(r'"(\$(?:@|\{[^}]*\}))"', raw):
            value, end, _ = self._dollar(whole.group(1), 0)
            if isinstance(value, list) and end == len(whole.group(1)):
                return list(value)  # "$@", "${a[@]}": a word per element, none when there are none
        if split and len(braced := expand_braces(raw)) > 1:  # a command's words, not an assignment's value
            return [word for each in braced for word in self.fields(each)]
        words = _Words(self.budget)
        i = 0
        while i < len(raw):
            i = self._step(raw, i, words, split)
        return words.result()

    def _step(self, raw: str, i: int, words: "_Words", split: bool) -> int:
        """Read the part of `raw` at i into `words`; where the next part starts."""
        char = raw[i]
        if char == '"':
            words.quoted = not words.quoted
            words.content[-1] = True
            return i + 1
        if char == "'" and not words.quoted:
            return _single_quoted(raw, i, words)
        if char == "\\":
            return _escaped(raw, i, words)
        if raw.startswith("$'", i) and not words.quoted:
            return _ansi_c(raw, i, words)
        if char in "$`":
            return self._expansion(raw, i, words, split)
        words.add(char, False)
        return i + 1

    def _expansion(self, raw: str, i: int, words: "_Words", split: bool) -> int:
        value, end, known = self._dollar(raw, i)
        if isinstance(value, list):  # "$@", "${a[@]}": one word per element, even quoted
            for n, item in enumerate(value):
                if n:
                    words.new_word(True)
                words.add(item, split and not words.quoted)
            return end
        words.add(value, known and split and not words.quoted)
        return end

    def string(self, raw: str) -> str:
        """`raw` expanded as one word (an assignment's value, a here-document line): no splitting."""
        return " ".join(self.fields(raw, split=False))

    def text(self, body: str) -> str:
        """A here-document body whose delimiter was not quoted: expansions happen, quotes stay."""
        self.budget.spend(len(body))
        out, i = [], 0
        while i < len(body):
            if body[i] == "\\" and body[i + 1:i + 2] in ("$", "`", "\\"):
                out.append(body[i + 1])
                i += 2
            elif body[i] in "$`":
                value, i, _ = self._dollar(body, i)
                out.append(" ".join(value) if isinstance(value, list) else value)
            else:
                out.append(body[i])
                i += 1
        return "".join(out)

    def value(self, raw: Optional[str]) -> Optional[str]:
        """A count or name only known when nothing in it is left unexpanded; else None."""
        if raw is None:
            return None
        expanded = self.string(raw)
        return None if re.search(r"\$[\w{(@*#?!]|`", expanded) else expanded

    # -- one expansion --------------------------------------------------------------------------

    def _dollar(self, raw: str, i: int) -> tuple[object, int, bool]:
        """(value, end, whether it is known) of the expansion at raw[i]; unknown ones as written."""
        if raw[i] == "`":
            end = raw.find("`", i + 1)
            end = len(raw) if end < 0 else end + 1
            value = self._substitution(raw[i + 1:end - 1])
        elif raw.startswith("$((", i):
            end = closing(raw, i + 1)  # past the "))" that closes it: nested $(( )) and ( ) inside too
            value = self._arithmetic(raw[i + 3:end - 2])
        elif raw.startswith("$(", i):
            end = closing(raw, i + 1)
            value = self._substitution(raw[i + 2:end - 1])
        elif raw.startswith("${", i):
            end = closing(raw, i + 1, "{", "}")
            value = self._parameter(raw[i + 2:end - 1])
        elif match := re.match(r"[A-Za-z_]\w*|[0-9@*#?$!]", raw[i + 1:]):
            end = i + 1 + match.end()
            value = self._parameter(match.group(0))
        else:
            return "$", i + 1, True
        if isinstance(value, Written):
            return str(value), end, False
        return (raw[i:end], end, False) if value is None else (value, end, True)

    def _get(self, name: str, index: Optional[str]) -> Optional[object]:
        if RUNTIME_NAME.fullmatch(name) and not self.runtime:
            return None
        value = self.lookup(name)
        if name in ("@", "*"):
            return value
        if index is None or value is None:
            return value[0] if isinstance(value, list) and index is None and value else value
        items = value if isinstance(value, list) else [value]
        if index == "@":
            return list(items)
        if index == "*":
            return " ".join(items)
        position = arith(index, self.lookup)
        if position is None:  # only the job knows the index (`${A[$SLURM_ARRAY_TASK_ID]}`, a loop's `${A[$i]}`)
            return Written(f"${{{name}[{self._own_values(index)}]}}")
        return items[position] if -len(items) <= position < len(items) else ""

    def _parameter(self, body: str) -> Optional[object]:
        match = _PARAM.fullmatch(body)
        if not match:
            return None
        length, indirect, name, index, rest = match.groups()
        value = self._get(name, index)
        if isinstance(value, Written):  # bash's array element, kept for the job to look up
            return value if not (rest or length or indirect) else None
        if indirect:
            value = self._get(value, None) if isinstance(value, str) and value else None
        if length:
            if index in ("@", "*"):  # ${#a[*]}: how many items, not the length of their joined text
                value = self._get(name, "@")
            return str(len(value)) if isinstance(value, (list, str)) else None
        if not rest:
            return value
        if op := re.match(r":?[-=+?]", rest):
            return self._default(name, value, rest[op.end():], op.group(0))
        if isinstance(value, list):
            return _list_slice(name, value, rest)
        return self._string_operation(value, rest) if isinstance(value, str) else None

    def _default(self, name: str, value, word: str, op: str) -> Optional[object]:
        """${a:-x}, ${a-x}, ${a:=x}, ${a:+x}, ${a:?x}."""
        is_set = value is not None and (not op.startswith(":") or value not in ("", []))
        if op[-1] == "+":
            return self.string(word) if is_set else ("" if value is not None else None)
        if is_set:
            return value
        if value is None and RUNTIME_NAME.fullmatch(name):
            return None  # the job sets it; the default is only what bash gives outside one
        if value is None and not self.runtime and op[-1] in "-=":
            return self._live_default(name, word, op)
        return self.string(word) if op[-1] in "-=" else None

    def _live_default(self, name: str, word: str, op: str) -> Optional[object]:
        """${A:-x} where the script never gives A a value: a job argument, or a variable the submitter's
        environment may set (sbatch(1) --export defaults to ALL, qsub -V), so the job's bash decides it.
        Kept live with the script's own values put in its default (${1:-${C:-a}} -> ${1:-a}); kept as
        written where the default does not stay one word (bash(1) "Shell Parameter Expansion")."""
        default = self.string(word)
        if not isinstance(default, str):
            return None
        if not default and not name.isdigit():  # `${SRUN_ARGS:-""}`: no word unless the environment gives some,
            return ""  # and a launcher's options read live would be options nobody knows
        if re.search(r"[\s'\"\\`{}]|\$\(", re.sub(r"\$\{\w+(?::?[-=][^{}]*)?\}", "", default)):
            return None if name.isdigit() else default  # braces, quotes, a command: not one plain word
        return Written(f"${{{name}{op}{default}}}")

    def _string_operation(self, value: str, rest: str) -> Optional[str]:
        """${a%x}, ${a#x}, ${a:1:2}, ${a/x/y} on a string."""
        if removal := re.fullmatch(r"(%%|%|##|#)(.*)", rest, re.S):
            return trim(value, removal.group(1), self.string(removal.group(2)))
        if sub := re.fullmatch(r":(-?\d+)(?::(\d+))?", rest):
            start = int(sub.group(1))
            return value[start:start + int(sub.group(2))] if sub.group(2) else value[start:]
        if replace := re.fullmatch(r"(//?)([^/]*)/?(.*)", rest, re.S):
            old, new = self.string(replace.group(2)), self.string(replace.group(3))
            self.budget.spend(value.count(old) * len(new) if old else 0)  # charged before it is built
            return value.replace(old, new) if replace.group(1) == "//" else value.replace(old, new, 1)
        return None

    def _arithmetic(self, expr: str) -> Optional[str]:
        expr = self.text(expr)  # as bash does: parameters and substitutions first
        value = arith(expr, self.lookup)
        if value is not None:
            return str(value)
        if self.runtime:
            return None
        return "$((" + self._own_values(expr) + "))"  # for `resolve` and the job: the script's values are gone by then

    def _own_values(self, expr: str) -> str:
        """An arithmetic expression with the script's own values put in for its names; the others as written."""
        def own(match):
            known = self.lookup(match.group(1) or match.group(2))
            return known if isinstance(known, str) and known else match.group(0)
        return re.sub(r"\$\{?([A-Za-z_]\w*)\}?|\b([A-Za-z_]\w*)\b", own, expr)

    def _substitution(self, command: str) -> Optional[str]:
        """The output of the few commands whose output is known; None (kept as written) otherwise."""
        if not command.strip() or command.lstrip().startswith("#"):
            return ""  # `# a note` inside a continued launch line: bash runs nothing, so no word
        words = command.split()
        output = self.output_of(command)
        if output is not None:
            return output
        if re.search(r"\bwc\s+-l\b", command) and re.search(r"(?i)nodefile|hostfile|hostnames|nodelist", command):
            per_slot = "PBS_NODEFILE" in command and not re.search(r"\bsort\s+-u\b|\buniq\b", command)
            nodes = self.lookup(NODEFILE_LINES if per_slot else NODES) if self.runtime else None
            return str(nodes) if nodes else None
        if words[:1] == ["echo"] and "|" not in command:
            return " ".join(self.fields(" ".join(words[1:]))) if "$(" not in command else None
        if words[:1] == ["expr"] and len(words) == 4:
            value = arith(" ".join(self.string(w).replace("\\*", "*") for w in words[1:]), self.lookup)
            return None if value is None else str(value)
        if words[:1] in (["basename"], ["dirname"]) and len(words) == 2:
            path = self.value(words[1])
            if path is not None:
                return path.rsplit("/", 1)[-1] if words[0] == "basename" else (path.rsplit("/", 1)[0] if "/" in path else ".")
        return None


def _split(text: str) -> list[str]:
    """`text` split at blanks as bash splits an unquoted expansion, except inside what is left
    unexpanded ($(...), `...`, ${...}): that stands for one unknown value, not for its words."""
    if "`" not in text and "$(" not in text and "${" not in text:  # the common case, at C speed
        return [part for part in re.split(r"[ \t\n]+", text) if part] or [""]
    parts, start, depth, i = [], 0, 0, 0
    while i < len(text):
        char = text[i]
        if char == "`":
            end = text.find("`", i + 1)
            i = len(text) if end < 0 else end + 1
            continue
        if text.startswith("$(", i) or text.startswith("${", i):
            depth += 1
            i += 2
            continue
        if char in "()}" and depth:  # `$((a - 1))`, `$(f (x))`: parentheses nest, each closed by its own
            depth += 1 if char == "(" else -1
        elif char in " \t\n" and not depth:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return [part for part in parts if part] or [""]


def runtime_values(nodes: Optional[int], known: dict, slots_per_node: Optional[int] = None,
                   devices: Optional[int] = None) -> dict:
    """The lookup `Shell.resolve` uses: the scheduler variables the directives fix, the node count,
    the lines of the PBS node file (slots_per_node per node) and the devices of a node."""
    known = {**known, DEVICES: str(devices)} if devices else dict(known)
    if not nodes:
        return known
    return {**known, NODES: str(nodes), NODEFILE_LINES: str(nodes * (slots_per_node or 1))}


def _list_slice(name: str, value: list, rest: str) -> Optional[list]:
    """"${@:3}", "${a[@]:1:2}"."""
    sub = re.fullmatch(r":(\d+)(?::(\d+))?", rest)
    if not sub or PASS_THROUGH in value:
        return None  # part of what is given at submit time: kept as written, never silently none
    start = max(int(sub.group(1)) - (name in "@*"), 0)  # "${@:3}": from the third argument
    return value[start:start + int(sub.group(2))] if sub.group(2) else value[start:]


class _Words:
    """The words Expander.fields builds: unquoted expansions split as bash splits them."""

    def __init__(self, budget: Budget):
        self.parts: list[list[str]] = [[]]
        self.content = [False]  # whether each word exists ("" counts when quoted)
        self.quoted = False
        self.budget = budget

    def new_word(self, content: bool) -> None:
        self.parts.append([])
        self.content.append(content)

    def add(self, text: str, split: bool) -> None:
        self.budget.spend(len(text))
        if not split:
            self.parts[-1].append(text)
            self.content[-1] = self.content[-1] or bool(text) or self.quoted
            return
        for n, part in enumerate(_split(text)):
            if n:
                self.new_word(False)
            self.parts[-1].append(part)
            self.content[-1] = self.content[-1] or bool(part)

    def result(self) -> list[str]:
        return ["".join(part) for part, content in zip(self.parts, self.content) if content]


def _single_quoted(raw: str, i: int, words: _Words) -> int:
    end = raw.find("'", i + 1)
    end = len(raw) if end < 0 else end
    words.add(raw[i + 1:end], False)
    words.content[-1] = True
    return end + 1


def _escaped(raw: str, i: int, words: _Words) -> int:
    following = raw[i + 1:i + 2]
    if words.quoted and following not in ('$', '`', '"', '\\', '\n'):
        words.add("\\", False)
        return i + 1
    words.add("" if following == "\n" else following, False)
    return i + 2


def _ansi_c(raw: str, i: int, words: _Words) -> int:
    """$'...': backslash escapes decoded."""
    end = i + 2
    while end < len(raw) and raw[end] != "'":
        end += 2 if raw[end] == "\\" else 1
    words.add(raw[i + 2:end].encode().decode("unicode_escape", "replace"), False)
    words.content[-1] = True
    return end + 1
