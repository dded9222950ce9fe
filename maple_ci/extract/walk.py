"""Walking a script as bash would run it, without running anything: assignments and arrays,
exports, functions, `eval`, `set --`, here-documents written to files, files it sources, and the
commands that may launch the training program (handed to `launch.chain`).

Every file the script names is read through maple_ci.files.read_inside: inside the checkout,
never through a symlink, capped. What a sourced file sets is read as text; the port never carries
the `source` line itself (the file would run at the center).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..errors import MapleError
from ..files import inside, read_inside
from .budget import Budget, matches
from .builtins import BUILTINS, Builtins, evaluate_test, let_values
from .evaluate import PASS_THROUGH, Expander, arith
from .shell import Case, Command, Function, If, Node, parse

_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)(?:\[([^\]]*)\])?(\+?)=(.*)", re.S)
# A value that is only a command's output: `$(hostname)`. Arithmetic not worked out here is not one: its
# text is carried (`--global-batch-size $((2*PBS_JOBSIZE*4))`) and worked out on the target at run time,
# where the name would be empty.
_UNKNOWN_OUTPUT = re.compile(r"\s*(?:\$\((?!\().*\)|`.*`)\s*", re.S)
MAX_DEPTH = 6  # nested bash -c / wrapper scripts / eval / source / function calls followed
# The value of a variable that branches the script cannot decide between set differently, one of
# them from what only the job knows: it reads like a command's output (`lookup` keeps `$NAME` as
# written, counts stay unknown).
RUN_TIME_VALUE = "$(...)"
_JOB_COMPUTED = re.compile(r"\$\(|`")  # arithmetic or a command's output left for the job


@dataclass
class Shell(Builtins):
    """What the script has set up to the command being read."""

    root: Optional[Path]  # the checkout: files are read only inside it
    base_dir: Optional[Path]  # where relative paths the script names are looked up first
    runtime: dict  # scheduler variables the directives fix, and NODES
    vars: dict = field(default_factory=dict)  # str for scalars, list for arrays
    functions: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)  # here-documents the script writes: path -> text
    positional: list = field(default_factory=list)
    name: str = "bash"  # $0: the script as invoked, for `$(dirname "$0")/train.py`
    arguments_known: bool = True  # False for the top-level script: `sbatch job.sh a b` passes them
    env: dict = field(default_factory=dict)  # exported variables, as the port should carry them
    modules: list = field(default_factory=list)
    python_env: Optional[str] = None
    launches: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    depth: int = 0  # wrapper scripts, bash -c strings and function calls this shell is inside
    commands: list = field(default_factory=list)  # the script's own other commands: (line, words, launch)
    submits: list = field(default_factory=list)  # `sbatch ...`/`qsub ...` lines, expanded (extract/submit.py)
    nested: int = 0  # eval and source levels: they count toward MAX_DEPTH with `depth`
    budget: Budget = field(default_factory=Budget)  # shared by every shell of one extraction
    output: Optional[list] = None  # what `echo` prints, in a function run for its output: $(f a b)

    def lookup(self, name: str):
        if not self.arguments_known and name in ("@", "*"):
            return [PASS_THROUGH] if name == "@" else PASS_THROUGH  # given at submit time: passed on
        if not self.arguments_known and (name == "#" or name.isdigit() and name != "0"):
            return None  # `$1` is a value the user gives at submit time: kept as written
        if name.isdigit():
            index = int(name)
            return self.positional[index - 1] if 0 < index <= len(self.positional) else ("" if index else self.name)
        if name == "@":
            return list(self.positional)
        if name == "*":
            return " ".join(self.positional)
        if name == "#":
            return str(len(self.positional))
        value = self.vars.get(name)
        # A variable holding what only the job knows ($(hostname), $((N * 4)) over unknowns) is
        # referred to by name, as written; `resolve` still looks inside it for counts.
        return None if isinstance(value, str) and _UNKNOWN_OUTPUT.fullmatch(value) else value

    @property
    def expand(self) -> Expander:
        return Expander(self.lookup, budget=self.budget, output_of=self.output_of)

    def output_of(self, command: str) -> Optional[str]:
        """What `$(name args)` prints when `name` is one of the script's functions (its echo lines,
        as bash would capture them); None for any other command."""
        nodes = parse(command, self.budget)
        if len(nodes) != 1 or not isinstance(nodes[0], Command) or self.depth + self.nested >= MAX_DEPTH:
            return None
        fields = [f for word in nodes[0].words for f in self.expand.fields(word)]
        if not fields or fields[0] not in self.functions:
            return None
        sub = self.child(fields[1:], self.name)
        sub.output = []
        sub.run(self.functions[fields[0]])
        return "\n".join(sub.output)

    def resolve(self, raw: Optional[str]) -> Optional[str]:
        """A field's value with the scheduler's known variables put in; None if still unknown."""
        busy: set = set()

        def lookup(name: str):
            if name in self.runtime:
                return self.runtime[name]
            value = self.vars.get(name) if not name.isdigit() and name not in "@*#" else self.lookup(name)
            if isinstance(value, str) and "$" in value and name not in busy:  # PATH=$PATH:x refers to itself
                busy.add(name)
                value = expander.string(value)
                busy.discard(name)
            return value

        expander = Expander(lookup, runtime=True, budget=self.budget)
        return expander.value(raw)

    def child(self, positional: list[str], name: str = "bash") -> "Shell":
        """The shell of a `bash -c` string or a wrapper script: it sees the variables (bash would
        see only exported ones; scripts that forget `export` still mean them), has its own
        arguments, and shares what the port collects."""
        return Shell(self.root, self.base_dir, self.runtime, dict(self.vars), self.functions, self.files,
                     list(positional), name, True, self.env, self.modules, self.python_env, [], self.notes,
                     self.depth + 1, nested=self.nested, budget=self.budget)

    # -- reading files the script names ---------------------------------------------------------

    def read(self, path: str) -> Optional[str]:
        """The text of a file the script names (written by a here-document earlier, or in the
        checkout); None when it is unknown, outside the checkout, a symlink or unreadable."""
        if path in self.files:
            return self.files[path]
        if self.root is None or "$" in path or "`" in path:
            return None
        for folder in self._folders():
            candidate = Path(path) if Path(path).is_absolute() else folder / path
            full = inside(self.root, candidate)
            if full is not None and full.is_file():
                try:
                    return read_inside(self.root, full)
                except MapleError:
                    return None
        return None

    def _folders(self) -> list:
        """Where a relative path is looked up: the script's folder, then each folder above it up to
        the checkout's root (a job runs where it was submitted: `sbatch recipes/launch.slurm`
        from the repository names `recipes/...` from there), then the root."""
        folders = [self.base_dir] if self.base_dir is not None else []
        if self.base_dir is not None and self.root is not None:
            try:
                base, root = self.base_dir.resolve(), self.root.resolve()
            except (OSError, RuntimeError):
                base = root = None
            if base is not None and base != root and base.is_relative_to(root):
                folders += [parent for parent in base.parents if parent != root and parent.is_relative_to(root)]
        return folders + ([self.root] if self.root is not None else [])

    # -- running ---------------------------------------------------------------------------------

    def run(self, nodes: list[Node]) -> None:
        for node in nodes:
            self.budget.step()
            if isinstance(node, Function):
                self.functions[node.name] = node.body
            elif isinstance(node, Case):  # an If to the other walkers, which take every branch
                self._case(node)
            elif isinstance(node, If):
                self._if(node)
            else:
                self.command(node)

    def _if(self, node: If) -> None:
        """The branch bash takes when the tests are decided by the script's own values; every
        branch that may run, in order, when one is not (the launch may be in any of them)."""
        possible = []
        for condition, body in node.branches:
            taken = self._test(condition)
            if taken is None:
                possible.append(body)
            elif taken:
                if not possible:
                    self.run(body)
                    return
                possible.append(body)
                self._undecided(possible, False)
                return
        if not possible:
            self.run(node.otherwise)
            return
        self._undecided([*possible, node.otherwise], False)

    def _case(self, node: Case) -> None:
        """The clause whose pattern matches the word, as bash matches it (glob patterns, `a|b`);
        every clause when the word is only known to the job."""
        fields = self.expand.fields(node.word) if node.word else [""]
        word = fields[0] if len(fields) == 1 else None
        if word is not None and "$" not in word and "`" not in word:
            for patterns, (_, body) in zip(node.patterns, node.branches):
                if any(matches(word, self.expand.string(p)) for p in patterns):
                    self.run(body)
                    return
            return
        bodies = [body for _, body in node.branches]
        catch_all = any(p == "*" for patterns in node.patterns for p in patterns)
        self._undecided(bodies, not catch_all)

    def _undecided(self, bodies: list, may_skip: bool) -> None:
        """Branches the script cannot choose between: each runs from the same state (its launches
        are all found). A variable they leave alike keeps its value; one they leave differently
        takes the last branch's (the default: `else`, `*)`), unless one branch computes it from
        what only the job knows (`$((PBS_NCPUS / ...))`, `$(nproc)`): then only the job knows it."""
        before = dict(self.vars)
        outcomes = [before] if may_skip else []
        for body in bodies:
            self.vars = dict(before)
            self.run(body)
            outcomes.append(self.vars)
        missing = object()
        merged = {}
        for name in {name for outcome in outcomes for name in outcome}:
            values = [outcome.get(name, missing) for outcome in outcomes]
            if all(value == values[0] for value in values):
                chosen = values[0]
            elif any(isinstance(value, str) and _JOB_COMPUTED.search(value) for value in values):
                chosen = RUN_TIME_VALUE
            else:
                chosen = values[-1]
            if chosen is not missing:
                merged[name] = chosen
        self.vars = merged

    def _test(self, condition: list[Node]) -> Optional[bool]:
        """The outcome of `[ ... ]`, `[[ ... ]]` or `test ...` over known values; None otherwise."""
        if len(condition) != 1 or not isinstance(condition[0], Command):
            return None
        words = condition[0].words
        if not words or words[0] not in ("[", "[[", "test"):
            return None
        values = []
        for word in words[1:len(words) - (words[0] != "test")]:
            fields = self.expand.fields(word) or [""]
            if not self.arguments_known and len(fields) == 1 and "'" not in word:
                # the script is read as run without arguments (`${1:-x}` is x, "$@" is empty): a
                # test sees its arguments empty, as bash would
                fields = [re.sub(r"\$(?:\{#\}|#)", "0", re.sub(r"\$(?:\{\d+\}|\d)", "", fields[0].replace(PASS_THROUGH, "")))]
            if len(fields) != 1 or "$" in fields[0] and not re.fullmatch(r"'.*'", word):
                return None
            values.append(fields[0])
        return evaluate_test(values)

    def run_text(self, text: str) -> None:
        """An eval'd string or a sourced file: one level deeper (`eval "$a"` may run itself)."""
        if self.depth + self.nested < MAX_DEPTH:
            self.nested += 1
            try:
                self.run(parse(text, self.budget))
            finally:
                self.nested -= 1

    def command(self, cmd: Command) -> None:
        self._here_document(cmd)
        if cmd.words and cmd.words[0].startswith("(("):
            self._let(cmd.words[0][2:-2])
            return
        assignments = list(itertools.takewhile(_ASSIGNMENT.fullmatch, cmd.words))
        words = cmd.words[len(assignments):]
        if not words:
            for word in assignments:
                self._assign(word)
            return
        fields = [f for word in words for f in self.expand.fields(word)]
        if not fields:
            return
        head, rest = fields[0], fields[1:]
        builtin = BUILTINS.get(head)
        if builtin and getattr(self, builtin)(head, rest, words) is not False:
            return
        if head in self.functions and self.depth + self.nested < MAX_DEPTH:
            self._call(head, rest)
        else:
            self._launch(cmd, assignments, fields)

    def _call(self, name: str, arguments: list[str]) -> None:
        saved = self.positional, self.arguments_known
        self.positional, self.arguments_known = arguments, True
        self.depth += 1
        self.run(self.functions[name])
        self.depth -= 1
        self.positional, self.arguments_known = saved

    def _launch(self, cmd: Command, assignments: list[str], fields: list[str]) -> None:
        from .launch import chain  # launch reads wrappers through this module's Shell

        # `VAR=x srun ...`: the program sees VAR, and a launcher reads its own (llamafactory-cli's NNODES)
        launch = chain([self.expand.string(word) for word in assignments] + fields, self, [])
        if not self.depth:  # what the port does not carry is listed; a wrapper's lines are its own
            self.commands.append((cmd.line, cmd.words, launch))
        if launch and (launch.score or self.depth and launch.entry):  # inner: scored by the caller
            self.launches.append(launch)

    def _here_document(self, cmd: Command) -> None:
        """`cat > run.sh <<EOF ... EOF`: the file's text, for a later `bash run.sh` or `srun ./run.sh`;
        `read -r -d '' CMD <<EOF`: the variable's value, for a later `bash -c "$CMD"`."""
        if cmd.heredoc is None or not cmd.words or cmd.words[0] not in ("cat", "tee", "read"):
            return
        body, expands = cmd.heredoc
        if cmd.words[0] == "read":
            self.vars[cmd.words[-1]] = (self.expand.text(body) if expands else body).rstrip("\n")
            return
        targets = [t for op, t in cmd.redirects if op in (">", ">>", ">|")] + cmd.words[1:2]
        targets = [t for t in targets if not t.startswith("-")]
        if targets:
            text = self.expand.text(body) if expands else body
            for target in targets:
                self.files[self.expand.string(target)] = text
                self.files[self.expand.string(target).removeprefix("./")] = text

    def _assign(self, word: str, export: bool = False) -> None:
        name, index, append, value = _ASSIGNMENT.fullmatch(word).groups()
        if value.startswith("(") and value.endswith(")") and index is None:
            items = [f for node in parse(value[1:-1], self.budget) if isinstance(node, Command)
                     for w in node.words for f in self.expand.fields(w)]
            old = self.vars.get(name) if append else None
            self.vars[name] = (old if isinstance(old, list) else [old] if old else []) + items
            return
        text = self.expand.string(value)
        if index is not None:
            items = self.vars.get(name)
            items = list(items) if isinstance(items, list) else [items] if items else []
            position = arith(index, self.lookup)
            if position is not None and 0 <= position <= len(items):
                items[position:position + 1] = [text]
            self.vars[name] = items
            return
        old = self.vars.get(name)
        if append and isinstance(old, list):
            self.vars[name] = old + [text]
        else:
            self.vars[name] = (old or "") + text if append and isinstance(old, str) else text
        if export or name in self.env:
            self.env[name] = self.vars[name]

    def _declare(self, head: str, raw: list[str]) -> None:
        flags = "".join(w[1:] for w in raw if w.startswith("-"))
        export = head == "export" or "x" in flags
        for word in raw:
            if word.startswith("-"):
                continue
            if _ASSIGNMENT.fullmatch(word):
                self._assign(word, export)
            elif export and isinstance(self.vars.get(word), str):
                self.env[word] = self.vars[word]

    def _let(self, expr: str) -> None:
        self.vars.update(let_values(expr, self.lookup))

    def _source(self, path: str, args: list[str]) -> None:
        if path.endswith("/activate") or path == "activate":
            self.python_env = f"source {path}" if path != "activate" else " ".join(["conda", "activate", *args[:1]])
            return
        text = self.read(path)
        if text is None:
            self.notes.append(f"`source {path}` is not carried over (it would run at the center); "
                              "set up the same environment on the target")
            return
        self.notes.append(f"what {path} sets was read; the `source` line itself is not carried over")
        saved, self.positional = self.positional, args or self.positional
        self.run_text(text)
        self.positional = saved
