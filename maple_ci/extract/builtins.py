"""Bash's builtins as the walk reads them: `test`/`[ ]` over known values, `let`, Lmod's `module`/`ml`
(what it loads and unloads), and the walk's table of the builtins it follows (BUILTINS, Builtins)."""

import re
from typing import Optional


def evaluate_test(values: list[str]) -> Optional[bool]:
    if values[:1] == ["!"]:
        inner = evaluate_test(values[1:])
        return None if inner is None else not inner
    if len(values) == 2 and values[0] in ("-z", "-n"):
        return (values[1] == "") == (values[0] == "-z")
    if len(values) == 1:
        return values[0] != ""
    if len(values) != 3:
        return None
    left, op, right = values
    if op in ("=", "=="):
        return left == right
    if op == "!=":
        return left != right
    numbers = {"-eq": "__eq__", "-ne": "__ne__", "-gt": "__gt__", "-ge": "__ge__", "-lt": "__lt__", "-le": "__le__"}
    if op in numbers and re.fullmatch(r"-?\d+", left) and re.fullmatch(r"-?\d+", right):
        return getattr(int(left), numbers[op])(int(right))
    return None


def _load(names: list[str], modules: list) -> None:
    modules.extend(n for n in names if n not in modules)


def _unload(names: list[str], modules: list) -> None:
    modules[:] = [m for m in modules if m not in names]


def _swap(names: list[str], modules: list) -> None:
    if len(names) != 2:
        return
    old, new = names
    if old in modules:
        modules[:] = [new if m == old else m for m in modules]
    else:
        modules.append(new)


_MODULE_ACTIONS = {"load": _load, "add": _load, "try-load": _load, "unload": _unload, "rm": _unload,
                   "del": _unload, "swap": _swap, "switch": _swap}  # fmt: skip
# `ml` subcommands that neither load nor unload
_ML_OTHERS = ("purge", "use", "list", "avail", "spider", "show", "save", "restore", "reset")


def _ml_shorthand(args: list[str], words: list[str], modules: list) -> None:
    """`ml a b` loads, `ml -a` unloads; `ml purge`, `ml use` and the rest do neither."""
    if words and words[0] in _ML_OTHERS:
        return
    _load(words, modules)
    _unload([w[1:] for w in args if w.startswith("-") and w[1:] in modules], modules)


def module_command(head: str, args: list[str], modules: list) -> None:
    """What Lmod's `module ACTION NAMES` or `ml ...` does to the list of loaded modules."""
    words = [w for w in args if not w.startswith("-")]
    if head == "ml" and (not words or words[0] not in _MODULE_ACTIONS):
        _ml_shorthand(args, words, modules)
        return
    action = _MODULE_ACTIONS.get(words[0]) if words else None
    if action:
        action(words[1:], modules)


def exports(head: str, raw: list[str]) -> bool:
    """Whether `export ...` / `declare -x ...` (flags as `-x`, `-rx`...) exports what it names."""
    return head == "export" or "x" in "".join(w[1:] for w in raw if w.startswith("-"))


def activation(path: str, args: list[str]) -> Optional[str]:
    """The Python environment `source PATH ARGS` activates (a venv's bin/activate, conda's
    `source activate NAME`); None for any other file."""
    if path == "activate":
        return " ".join(["conda", "activate", *args[:1]])
    return f"source {path}" if path.endswith("/activate") else None


def let_values(expr: str, lookup) -> dict[str, str]:
    """What `let` / `(( ))` assigns (`a=2*b`, `a+=1`, `a++`), where its arithmetic is known."""
    from .arith import arith

    values = {}

    def known(name: str):  # `let a=1, b=a+1`: a part sees what the parts before it assigned
        return values[name] if name in values else lookup(name)

    for part in expr.split(","):
        if match := re.fullmatch(r"\s*([A-Za-z_]\w*)\s*([-+*/]?)=\s*(.+)", part):
            name, op, value = match.groups()
            result = arith(f"{name} {op} ({value})" if op else value, known)
        elif match := re.fullmatch(r"\s*([A-Za-z_]\w*)\s*(\+\+|--)\s*|\s*(\+\+|--)\s*([A-Za-z_]\w*)\s*", part):
            name = match.group(1) or match.group(4)
            result = arith(f"{name} {'+' if '+' in part else '-'} 1", known)
        else:
            continue
        if result is not None:
            values[name] = str(result)
    return values


class Builtins:
    """The builtins the walk follows, as methods of its Shell (walk.py): each returns False when the
    command is not the builtin's form after all (`set` without `--`), and is then read as a command."""

    def _declare_builtin(self, head, rest, words):
        self._declare(head, words[1:])

    def _unset(self, head, rest, words):
        for name in rest:
            self.vars.pop(name, None)

    def _let_builtin(self, head, rest, words):
        for expr in rest:
            self._let(expr)

    def _set(self, head, rest, words):
        if "--" not in rest:
            return False
        self.positional, self.arguments_known = rest[rest.index("--") + 1:], True

    def _shift(self, head, rest, words):
        self.positional = self.positional[int(rest[0]) if rest and rest[0].isdigit() else 1:]

    def _module(self, head, rest, words):
        module_command(head, rest, self.modules)

    def _activate(self, head, rest, words):
        if rest[:1] != ["activate"]:
            return False
        self.python_env = " ".join([head, "activate", *rest[1:2]])

    def _source_builtin(self, head, rest, words):
        if not rest:
            return False
        self._source(rest[0], rest[1:])

    def _eval(self, head, rest, words):
        self.run_text(" ".join(rest))

    def _cd(self, head, rest, words):
        self.cwd = rest[0].rstrip("/") if rest and rest[0] != "-" else None
        return False  # still a command of the job (a `cd` the port names)

    def _echo(self, head, rest, words):
        if self.output is None:
            return False
        self.output.append(" ".join(rest[1:] if rest[:1] in (["-n"], ["-e"], ["-E"]) else rest))


_DECLARE = {"export", "declare", "typeset", "local", "readonly"}
BUILTINS = {**{name: "_declare_builtin" for name in _DECLARE}, "unset": "_unset", "let": "_let_builtin", "set": "_set",
            "shift": "_shift", "module": "_module", "ml": "_module", "conda": "_activate", "mamba": "_activate",
            "micromamba": "_activate", "source": "_source_builtin", ".": "_source_builtin", "eval": "_eval",
            "echo": "_echo", "cd": "_cd"}
