"""Two of bash's builtins as the walk reads them: `test`/`[ ]` over known values, and Lmod's
`module`/`ml` (what it loads and unloads)."""

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


def module_command(head: str, args: list[str], modules: list) -> None:
    words = [w for w in args if not w.startswith("-")]
    if head == "ml" and (not words or words[0] not in ("load", "add", "unload", "rm", "del", "swap", "switch")):
        # `ml a b` loads, `ml -a` unloads; `ml purge`, `ml use` and the rest do neither
        if words and words[0] in ("purge", "use", "list", "avail", "spider", "show", "save", "restore", "reset"):
            return
        modules.extend(w for w in words if w not in modules)
        for w in args:
            if w.startswith("-") and w[1:] in modules:
                modules.remove(w[1:])
        return
    if not words:
        return
    action, names = words[0], words[1:]
    if action in ("load", "add", "try-load"):
        modules.extend(n for n in names if n not in modules)
    elif action in ("unload", "rm", "del"):
        modules[:] = [m for m in modules if m not in names]
    elif action in ("swap", "switch") and len(names) == 2:
        old, new = names
        if old in modules:
            modules[:] = [new if m == old else m for m in modules]
        else:
            modules.append(new)
