"""What reading one script may spend, and bash's pattern matching in linear time.

bash runs what it is given for as long as it takes; a reader of untrusted scripts cannot. One
`Budget` is shared by everything that reads a script (the walk, `eval`, sourced files, wrapper
scripts, function calls): words read and commands walked are steps, expansions spend bytes, and
running out of either is a MapleError naming the limit (exit 2), never a hang or an OOM kill.
Nested `eval`/`source`/function/wrapper levels are bounded separately (walk.MAX_DEPTH).

Glob patterns (`${a%%*x*y*z}`, `case` clauses) are matched by a bit-parallel automaton: one pass
over the text whatever the pattern, where a backtracking matcher takes polynomial time per cut.
"""

from __future__ import annotations

import re

from ..errors import MapleError

MAX_STEPS = 20_000  # the corpus's longest script takes under 300 (words read, commands walked)
MAX_EXPANDED_BYTES = 8 << 20  # text expanded or parsed in all; a launch script's values are a few KiB
SYNTAX_CHECK_STEPS = 100  # what asking `bash -n` about a `bash -c` string costs: at most 200 of them


class Budget:
    """Steps and expanded bytes left to one extraction."""

    def __init__(self, steps: int = MAX_STEPS, expanded: int = MAX_EXPANDED_BYTES):
        self.steps, self.expanded = steps, expanded

    def step(self, count: int = 1) -> None:
        self.steps -= count
        if self.steps < 0:
            raise MapleError(f"the script needs more than {MAX_STEPS:,} steps to read (words, commands, function "
                             "calls, eval and source, counted together); extraction stopped. A launch script "
                             "is far shorter: give the script that launches the training")

    def spend(self, size: int) -> None:
        """Charge `size` bytes of expanded text, before it is built where that is possible."""
        self.expanded -= size
        if self.expanded < 0:
            raise MapleError(f"reading the script would expand or parse more than {MAX_EXPANDED_BYTES >> 20} MiB of text "
                             "(a value that doubles itself, a file run again and again); extraction stopped")


# -- glob patterns ------------------------------------------------------------------------------

_TOKEN = re.compile(r"\*+|\?|\[!?\]?[^\]]*\]|\\.|.", re.S)


def _tokens(pattern: str) -> list:
    """('*',), ('?',), or a predicate on one character, for each element of `pattern`."""
    out = []
    for match in _TOKEN.finditer(pattern):
        text = match.group(0)
        if text.startswith("*"):
            out.append("*")
        elif text == "?":
            out.append("?")
        elif text.startswith("[") and len(text) > 2:
            negate = text[1] in "!^"
            body = text[2 if negate else 1:-1]
            chars = {chr(c) for start, end in _ranges(body) for c in range(ord(start), ord(end) + 1)}
            out.append((frozenset(chars), negate))
        else:
            out.append((frozenset(text[-1]), False))
    return out


def _ranges(body: str) -> list[tuple[str, str]]:
    """[a-z0_] as ranges: [('a', 'z'), ('0', '0'), ('_', '_')]."""
    ranges, i = [], 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            ranges.append((body[i], body[i + 2]))
            i += 3
        else:
            ranges.append((body[i], body[i]))
            i += 1
    return ranges


class Glob:
    """A bash pattern as an automaton: bit j of a state set means `j` elements are matched."""

    def __init__(self, pattern: str, reverse: bool = False):
        tokens = _tokens(pattern)
        if reverse:
            tokens.reverse()
        self.tokens, self.accept = tokens, 1 << len(tokens)
        self.stars = sum(1 << j for j, t in enumerate(tokens) if t == "*")
        self.masks: dict = {}

    def _mask(self, char: str) -> int:
        """States that move on by `char`."""
        if char not in self.masks:
            self.masks[char] = sum(1 << j for j, t in enumerate(self.tokens)
                                   if t == "?" or (t != "*" and (char in t[0]) != t[1]))
        return self.masks[char]

    def _closure(self, states: int) -> int:
        while True:  # a star may match nothing: from before it to after it
            grown = states | ((states & self.stars) << 1)
            if grown == states:
                return states
            states = grown

    def prefixes(self, text: str) -> list[bool]:
        """For each prefix length 0..len(text), whether text[:length] matches: one pass."""
        states = self._closure(1)
        matched = [bool(states & self.accept)]
        for char in text:
            states = self._closure((states & self.stars) | ((states & self._mask(char)) << 1))
            if not states:  # nothing longer can match
                return matched + [False] * (len(text) + 1 - len(matched))
            matched.append(bool(states & self.accept))
        return matched


def matches(text: str, pattern: str) -> bool:
    """Whether all of `text` matches the bash pattern."""
    return Glob(pattern).prefixes(text)[-1]


def trim(value: str, kind: str, pattern: str) -> str:
    """${value#pattern} (shortest prefix removed), ##, % (shortest suffix), %%."""
    if kind.startswith("#"):
        cuts = Glob(pattern).prefixes(value)
        found = [n for n, ok in enumerate(cuts) if ok]
        return value[(found[-1] if kind == "##" else found[0]):] if found else value
    cuts = Glob(pattern, reverse=True).prefixes(value[::-1])  # suffixes, matched from the end
    found = [n for n, ok in enumerate(cuts) if ok]
    return value[:len(value) - (found[-1] if kind == "%%" else found[0])] if found else value
