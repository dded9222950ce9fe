"""Brace expansion, the first of bash's expansions (bash(1) "Brace Expansion", read 2026-11-29): an
unquoted `pre{a,b}post` is the words `preapost prebpost`, and `{1..4}`, `{a..c}`, `{0..8..2}` a sequence.
It works on the word's text before any other expansion; a `{` that follows `$` is a parameter's, and
quoted or backslash-escaped braces are text. A word with nothing to expand is itself."""

import re

_SEQUENCE = re.compile(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?|([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?")
_MOST = 1024  # words one brace word may make: what a launch line holds, and a bound on the work


def _sequence(body: str):
    match = _SEQUENCE.fullmatch(body)
    if not match:
        return None
    numbers = match.group(1) is not None
    first, last, step = (match.group(1, 2, 3) if numbers else match.group(4, 5, 6))
    start, end = (int(first), int(last)) if numbers else (ord(first), ord(last))
    step = abs(int(step or 1)) or 1
    if abs(end - start) // step >= _MOST:
        return None
    values = range(start, end + 1, step) if end >= start else range(start, end - 1, -step)
    return [str(v) if numbers else chr(v) for v in values]


def _unquoted(word: str, start: int = 0):
    """(index, character) of each character of `word` from `start` that no quote or backslash hides."""
    quote, i = None, start
    while i < len(word):
        char = word[i]
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "\\":
            i += 1
        else:
            yield i, char
        i += 1


def _parts(word: str, open_at: int):
    """(end of the brace group, its comma-separated items at depth 1) for the `{` at open_at."""
    depth, items, start = 0, [], open_at + 1
    for i, char in _unquoted(word, open_at):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return i, items + [word[start:i]]
        elif char == "," and depth == 1:
            items.append(word[start:i])
            start = i + 1
    return None, []


def _next_open(word: str, start: int):
    return next((i for i, char in _unquoted(word, start) if char == "{"), None)


def expand_braces(word: str) -> list[str]:
    """The words bash's brace expansion makes of `word` (itself when there is none)."""
    i = _next_open(word, 0)
    while i is not None:
        end, items = _parts(word, i)
        if end is None:
            return [word]
        inner = None if word[i - 1:i] == "$" else items if len(items) > 1 else _sequence(items[0])  # ${...}: a parameter
        if inner:
            pre, post = word[:i], word[end + 1:]
            words = [w for item in inner for w in expand_braces(pre + item + post)]
            return words if len(words) <= _MOST else [word]
        i = _next_open(word, end + 1)  # `{x}` or a parameter's braces: text that expands nothing
    return [word]
