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
from .branches import UNEXPANDED, Branches, only_command
from .budget import Budget
from .builtins import BUILTINS, Builtins, activation, exports, let_values
from .arith import arith
from .evaluate import PASS_THROUGH, Expander
from .shell import Case, Command, Function, If, Node, parse
from .writes import Writes

_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)(?:\[([^\]]*)\])?(\+?)=(.*)", re.S)
# A value that is only a command's output: `$(hostname)`. Arithmetic not worked out here is not one: its
# text is carried (`--global-batch-size $((2*PBS_JOBSIZE*4))`) and worked out on the target at run time,
# where the name would be empty.
_UNKNOWN_OUTPUT = re.compile(r"\s*(?:\$\((?!\().*\)|`.*`)\s*", re.S)
MAX_DEPTH = 6  # nested bash -c / wrapper scripts / eval / source / function calls followed


@dataclass
class Shell(Builtins, Branches, Writes):
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
    # The commands of the strings and scripts the job runs (`srun bash -c "cd repo; pip install -e .;
    # python t.py"`): (line of the top-level command, words, launch), shared by every shell of a walk.
    inner: list = field(default_factory=list)
    written: dict = field(default_factory=dict)  # files the script writes (`> f`, `cat > f <<EOF`): path -> line
    at: int = 0  # the line of the top-level command being read
    pyxis: dict = field(default_factory=dict)  # Pyxis containers the job names: --container-name -> image
    own_depth: int = 0  # the depth of this shell's own commands (a child's are its string's or script's)
    calls: int = 0  # the script's function calls this shell is inside: their bodies are the script's own lines
    stdin: Optional[str] = None  # what the command being read gets as its input, when a here-document gives it
    piped: Optional[str] = None  # what a `cat <<EOF |` prints into the next command
    job_env: frozenset = frozenset()  # what the job's environment holds (its scheduler's): assigning one exports it
    assigned: dict = field(default_factory=dict)  # the line of each variable's last top-level assignment
    candidates: dict = field(default_factory=dict)  # the values branches that only the job decides give a variable
    looped: dict = field(default_factory=dict)  # variables set inside loops: name -> (those loops, value before)
    around: tuple = ()  # the loops around the top-level command being read (shell.Loop), outermost first
    cwd: Optional[str] = None  # the folder of the last `cd`: `cat > $D/job.sh <<EOF; cd $D; sbatch job.sh`

    def lookup(self, name: str):
        if name in ("@", "*", "#") or name.isdigit():
            return self._parameter(name)
        value = self.vars.get(name)
        # A variable holding what only the job knows ($(hostname), $((N * 4)) over unknowns) is
        # referred to by name, as written; `resolve` still looks inside it for counts.
        if self._after_its_loop(name):
            return self.looped[name][1] or None
        return None if isinstance(value, str) and _UNKNOWN_OUTPUT.fullmatch(value) else value

    def _parameter(self, name: str):
        """$0, $1..., $@, $*, $#. The top-level script's arguments are given at submit time: "$@"
        and $* are passed on, $1... and $# kept as written (None)."""
        if self.arguments_known or name == "0":
            return self._argument(name)
        if name == "@":
            return [PASS_THROUGH]
        return PASS_THROUGH if name == "*" else None

    def _argument(self, name: str):
        if name.isdigit():
            return self._positional(int(name))
        if name == "@":
            return list(self.positional)
        return " ".join(self.positional) if name == "*" else str(len(self.positional))

    def _positional(self, index: int) -> str:
        if index == 0:
            return self.name
        return self.positional[index - 1] if index <= len(self.positional) else ""

    @property
    def expand(self) -> Expander:
        return Expander(self.lookup, budget=self.budget, output_of=self.output_of)

    def output_of(self, command: str) -> Optional[str]:
        """What `$(name args)` prints when `name` is one of the script's functions (its echo lines,
        as bash would capture them); None for any other command."""
        node = only_command(parse(command, self.budget))
        if node is None or self._too_deep():
            return None
        fields = self._fields(node.words)
        if not fields or fields[0] not in self.functions:
            return None
        sub = self.child(fields[1:], self.name)
        sub.output = []
        sub.run(self.functions[fields[0]])
        return "\n".join(sub.output)

    def _fields(self, words: list[str]) -> list[str]:
        """The fields `words` expand to, as bash splits them."""
        return [f for word in words for f in self.expand.fields(word)]

    def _too_deep(self) -> bool:
        """Whether another eval, source or call would pass MAX_DEPTH."""
        return self.depth + self.nested >= MAX_DEPTH

    def resolve(self, raw: Optional[str]) -> Optional[str]:
        """A field's value with the scheduler's known variables put in; None if still unknown."""
        busy: set = set()

        def lookup(name: str):
            if name in self.runtime:
                return self.runtime[name]
            value = self.vars.get(name) if not name.isdigit() and name not in "@*#" else self.lookup(name)
            if name in busy:  # inside its own value (PATH=$PATH:x, N=${N:-8}): the environment's, unknown
                return None
            if isinstance(value, str) and "$" in value:
                busy.add(name)
                value = expander.string(value)
                busy.discard(name)
            return value

        expander = Expander(lookup, runtime=True, budget=self.budget)
        return expander.value(raw)

    def child(self, positional: list[str], name: str = "bash", arguments_known: bool = True) -> "Shell":
        """The shell of a `bash -c` string or a wrapper script: it sees the variables (bash would
        see only exported ones; scripts that forget `export` still mean them), has its own
        arguments (unknown for a string that holds the job's own, see launch._command_string),
        and shares what the port collects."""
        return Shell(self.root, self.base_dir, self.runtime, dict(self.vars), self.functions, self.files,
                     list(positional), name, arguments_known, self.env, self.modules, self.python_env, [], self.notes,
                     self.depth + 1, nested=self.nested, budget=self.budget, inner=self.inner, written=self.written,
                     at=self.at, own_depth=self.depth + 1, around=self.around, looped=self.looped)

    # -- reading files the script names ---------------------------------------------------------

    def read(self, path: str) -> Optional[str]:
        """The text of a file the script names (written by a here-document earlier, or in the
        checkout); None when it is unknown, outside the checkout, a symlink or unreadable."""
        written = f"{self.cwd}/{path}" if self.cwd and not path.startswith("/") else path
        if path in self.files or written in self.files:
            return self.files.get(path, self.files.get(written))
        if self.root is None or UNEXPANDED.search(path):
            return None
        full = self._find(path)
        return None if full is None else self._read_checkout_file(full)

    def _find(self, path: str) -> Optional[Path]:
        """The first file `path` names in the folders it is looked up in (an absolute path is
        itself: pathlib's `/` keeps it), inside the checkout."""
        for folder in self._folders():
            full = inside(self.root, folder / path)
            if full is not None and full.is_file():
                return full
        return None

    def _read_checkout_file(self, full: Path) -> Optional[str]:
        try:
            return read_inside(self.root, full)
        except MapleError:
            return None

    def _folders(self) -> list:
        """Where a relative path is looked up: the script's folder, then each folder above it up to
        the checkout's root (a job runs where it was submitted: `sbatch recipes/launch.slurm`
        from the repository names `recipes/...` from there), then the root."""
        if self.root is None:
            return [self.base_dir] if self.base_dir is not None else []
        if self.base_dir is None:
            return [self.root]
        # after `cd project` the job's relative paths are that folder's (bash(1) cd), the script's next
        entered = [self.base_dir / self.cwd] if self.cwd and not self.cwd.startswith(("/", "~", "$")) else []
        return [*entered, self.base_dir, *self._folders_above(), self.root]

    def _folders_above(self) -> list:
        """The folders between the script's folder and the checkout's root, nearest first."""
        try:
            base, root = self.base_dir.resolve(), self.root.resolve()
        except (OSError, RuntimeError):
            return []
        if base == root or not base.is_relative_to(root):
            return []
        return list(itertools.takewhile(root.__ne__, base.parents))

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

    def run_text(self, text: str) -> None:
        """An eval'd string or a sourced file: one level deeper (`eval "$a"` may run itself)."""
        if not self._too_deep():
            self.nested += 1
            try:
                self.run(parse(text, self.budget))
            finally:
                self.nested -= 1

    def command(self, cmd: Command) -> None:
        if not self.depth:
            self.at, self.around = cmd.line, cmd.loops
        self._loop_variables(cmd)
        self._here_document(cmd)
        self._record_writes(cmd)
        if cmd.words and cmd.words[0].startswith("(("):
            self._let(cmd.words[0][2:-2])
            return
        assignments = list(itertools.takewhile(_ASSIGNMENT.fullmatch, cmd.words))
        words = cmd.words[len(assignments):]
        if words:
            self._simple_command(cmd, assignments, words)
            return
        for word in assignments:
            self._assign(word)

    def _simple_command(self, cmd: Command, assignments: list[str], words: list[str]) -> None:
        """A command after its `VAR=x` prefixes: a builtin the walk follows, a call of one of the
        script's functions, or a command that may launch the program."""
        fields = self._fields(words)
        if not fields or self._builtin(fields, words):
            return
        if fields[0] in self.functions and not self._too_deep():
            self._call(fields[0], fields[1:])
        else:
            self._launch(cmd, assignments, fields)

    def _builtin(self, fields: list[str], words: list[str]) -> bool:
        """Whether a builtin the walk follows (BUILTINS) took the command."""
        method = BUILTINS.get(fields[0])
        return bool(method) and getattr(self, method)(fields[0], fields[1:], words) is not False

    def _call(self, name: str, arguments: list[str]) -> None:
        saved = self.positional, self.arguments_known
        self.positional, self.arguments_known = arguments, True
        self.depth += 1
        self.calls += 1
        self.run(self.functions[name])
        self.calls -= 1
        self.depth -= 1
        self.positional, self.arguments_known = saved

    def _launch(self, cmd: Command, assignments: list[str], fields: list[str]) -> None:
        from .launch import chain  # launch reads wrappers through this module's Shell

        # `VAR=x srun ...`: the program sees VAR, and a launcher reads its own (llamafactory-cli's NNODES)
        launch = chain([self.expand.string(word) for word in assignments] + fields, self, [])
        if launch:
            launch.loops = self.around + (cmd.loops if self.depth else ())
        # what the port does not carry is listed (a function's body too, once, at its own lines); a wrapper's lines are its own
        if self.depth == self.calls and not self.own_depth and not (self.calls and self._listed(cmd)):
            self.commands.append((cmd.line, cmd.words, launch))
        elif self.depth == self.own_depth:  # a command string's or a script's own (extract/setup.py)
            self.inner.append((self.at, cmd.words, launch))
        if _kept(launch, self.depth):
            self.launches.append(launch)

    def _listed(self, cmd: Command) -> bool:
        return any(line == cmd.line and words == cmd.words for line, words, _ in self.commands)

    def _assign(self, word: str, export: bool = False) -> None:
        name, index, append, value = _ASSIGNMENT.fullmatch(word).groups()
        before = self._before_loop(name)
        if index is not None:
            self.vars[name] = self._with_element(name, index, self.expand.string(value))
        elif value.startswith("(") and value.endswith(")"):
            items = self._array_items(value[1:-1])
            self.vars[name] = _as_list(self.vars.get(name) if append else None) + items
        else:
            self._assign_scalar(name, self.expand.string(value), append, export)
        self._set_in_loop(name, before)

    def _array_items(self, text: str) -> list[str]:
        """The fields of the words of `NAME=( ... )` (`NAME+=( ... )` adds them)."""
        items = []
        for node in parse(text, self.budget):
            if isinstance(node, Command):
                items += self._fields(node.words)
        return items

    def _with_element(self, name: str, index: str, text: str) -> list:
        """`NAME[index]=text`: the array with that element set (an index past its end is ignored)."""
        items = _as_list(self.vars.get(name))
        position = arith(index, self.lookup)
        if position is not None and 0 <= position <= len(items):
            items[position:position + 1] = [text]
        return items

    def _assign_scalar(self, name: str, text: str, append: bool, export: bool) -> None:
        self.vars[name] = self._appended(name, text) if append else text
        self.assigned[name] = self.at
        if export or name in self.env or name in self.job_env:
            self.env[name] = self.vars[name]

    def _appended(self, name: str, text: str):
        """`NAME+=text`: added to the array or the string NAME holds."""
        old = self.vars.get(name)
        if isinstance(old, list):
            return old + [text]
        return old + text if isinstance(old, str) else text

    def _declare(self, head: str, raw: list[str]) -> None:
        export = exports(head, raw)
        for word in raw:
            if not word.startswith("-"):
                self._declare_name(word, export)

    def _declare_name(self, word: str, export: bool) -> None:
        """`NAME=value` or `NAME` in `export`/`declare`/`local`...: assigned, or exported as it is."""
        if _ASSIGNMENT.fullmatch(word):
            self._assign(word, export)
        elif export and isinstance(self.vars.get(word), str):
            self.env[word] = self.vars[word]

    def _let(self, expr: str) -> None:
        self.vars.update(let_values(expr, self.lookup))

    def _source(self, path: str, args: list[str]) -> None:
        activated = activation(path, args)
        if activated:
            self.python_env = activated
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


def _as_list(value) -> list:
    """An array's items: a scalar is its only item, an unset or empty one has none."""
    if isinstance(value, list):
        return list(value)
    return [value] if value else []


def _kept(launch, depth: int) -> bool:
    """Whether a launch the walk met is one of the script's: scored, or inside a wrapper with an
    entry (the caller scores it)."""
    return bool(launch) and bool(launch.score or depth and launch.entry)
