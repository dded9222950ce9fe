"""The dashboard's checkboxes: each carries its `/maple` command (without `/maple`) in a hidden
comment, and ticking one is an `issues.edited` event whose payload has the body before and after.

Pure functions; the command text is untrusted (anyone who can edit the issue can write a box), so
only boxes whose command starts with an allowed word are read, and the command is then parsed and
checked like a comment's (commands.parse_comment).
"""

from __future__ import annotations

import re

# The commands a box may carry: port (not yet ported), verify (retry), recreate, ignore, unignore.
ALLOWED = ("port", "verify", "recreate", "ignore", "unignore")
_BOX = re.compile(r"^- \[([ xX])\] <!-- maple: ([A-Za-z0-9 ./_=-]{1,400}) -->", re.M)
_WORD = re.compile(r"[A-Za-z0-9./_=-]{1,200}")  # a box's word: no space, `>`, quote or markup


def box(words: tuple[str, ...], label: str) -> str | None:
    """An unticked box carrying the command `words` (a `/maple` command without `/maple`); None
    when a word holds a character a box cannot carry (a file name from the repository may)."""
    if not all(_WORD.fullmatch(w) for w in words):
        return None
    return f"- [ ] <!-- maple: {' '.join(words)} --> {label}"


def ticked(before: str, after: str) -> list[str]:
    """The commands of the boxes ticked by this edit (ticked now, not before), in order."""
    was = {text for mark, text in _BOX.findall(before or "") if mark != " "}
    found = [text for mark, text in _BOX.findall(after or "") if mark != " " and text not in was]
    return [text for text in dict.fromkeys(found) if text.split()[0] in ALLOWED]
