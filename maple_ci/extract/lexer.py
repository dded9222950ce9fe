"""bash's tokens as the parser in shell.py reads them: words kept as written (quotes, `$(...)`,
`${...}` and arrays' `(...)` inside them), operators, and redirections with the bodies of their
here-documents. The text has passed `bash -n` (or is an eval'd string that may not have): on text
bash would reject the lexer still ends."""

from __future__ import annotations

import re
from typing import Optional

from .budget import Budget

_OPERATORS = ("&&", "||", ";;&", ";;", ";&", "|&", ";", "&", "|", "(", ")")
_REDIRECT = re.compile(r"(\d*|&)(<<<|<<-|<<|>>|>&|<&|&>>|&>|>\||<>|<|>)")
_ARRAY_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*(?:\[[^\]]*\])?\+?=")
_BLANK_LINES = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\n)+")  # blank lines and comment lines
_QUOTES = "'\"`"
_ESCAPE_OR_QUOTE = "\\" + _QUOTES
_WORD_ENDS = " \t\n;&|<>)"


def closing(text: str, start: int, open_: str = "(", close: str = ")") -> int:
    """Index just past the bracket that closes the one at `start`, skipping quoted text; len(text)
    when none does."""
    depth, i = 0, start
    while i < len(text):
        char = text[i]
        if char in _ESCAPE_OR_QUOTE:
            i = _escape_or_quote_end(text, i)
            continue
        if char == open_:
            depth += 1
        elif char == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def _escape_or_quote_end(text: str, i: int) -> int:
    """Index just past the escaped character or the quoted part starting at text[i]."""
    return i + 2 if text[i] == "\\" else _quote_end(text, i)


def _quote_end(text: str, i: int) -> int:
    """Index just past the quoted part starting at text[i] ('...', "...", `...`)."""
    quote = text[i]
    i += 1
    while i < len(text) and text[i] != quote:
        i = _quoted_part_end(text, i, quote)
    return i + 1


def _quoted_part_end(text: str, i: int, quote: str) -> int:
    """Index just past the part of a `quote`d string starting at text[i]: an escaped character
    (not inside '...'), a `$(...)` inside "...", or one plain character."""
    if text[i] == "\\" and quote != "'":
        return i + 2
    if quote == '"' and text.startswith("$(", i):
        return closing(text, i + 1)
    return i + 1


def _arithmetic_end(text: str, i: int) -> int:
    """Index just past the `))` that ends the arithmetic starting at text[i]; len(text) when none does.
    Parentheses nest inside it (`$(( $((n*4)) - 1 ))`, `$(( (a+b)*2 ))`): the `))` is the one that
    closes its own `((`."""
    return closing(text, i + 1 if text[i] == "$" else i)  # `$((` or the `((` command


def _expansion_end(text: str, i: int) -> int:
    """Index just past the `$((...))`, `$(...)` or `${...}` starting at text[i]; i + 1 for a bare `$`."""
    if text.startswith("$((", i):
        return _arithmetic_end(text, i)
    if text.startswith("$(", i):
        return closing(text, i + 1)
    if text.startswith("${", i):
        return closing(text, i + 1, "{", "}")
    return i + 1


def _part_end(text: str, i: int) -> int:
    """Index just past the part of a word starting at text[i]: an array's `(...)`, an escaped
    character, a quoted part, an expansion, or one plain character."""
    char = text[i]
    if char == "(":  # NAME=( ... ): the array's words belong to the assignment
        return closing(text, i)
    if char in _ESCAPE_OR_QUOTE:
        return _escape_or_quote_end(text, i)
    return _expansion_end(text, i) if char == "$" else i + 1


def _operator_at(text: str, i: int) -> Optional[str]:
    for op in _OPERATORS:
        if text.startswith(op, i):
            return op
    return None


class Lexer:
    """Tokens (kind, value, line, offset): ("word", raw), ("op", operator or newline),
    ("redirect", [operator, target, heredoc])."""

    def __init__(self, text: str, budget: Budget):
        self.text, self.i, self.line, self.budget = text, 0, 1, budget
        self.pending: list[list] = []  # here-documents waiting for the end of the line: [delimiter, strip, quoted, token]

    def tokens(self):
        while self.i < len(self.text):
            token = self._BY_CHARACTER.get(self.text[self.i], Lexer._token)(self)
            if token is not None:
                yield token

    def _blank(self) -> None:
        self.i += 1

    def _backslash(self) -> Optional[tuple]:
        if not self.text.startswith("\\\n", self.i):
            return self._word_token()
        self.i += 2  # a line continued
        self.line += 1
        return None

    def _newline(self) -> tuple:
        self.i += 1
        self.line += 1
        self._read_heredocs()
        token = "op", "\n", self.line - 1, self.i - 1
        self._skip_blank_lines()
        return token

    def _comment(self) -> None:
        end = self.text.find("\n", self.i)
        self.i = len(self.text) if end < 0 else end

    _BY_CHARACTER = {" ": _blank, "\t": _blank, "\\": _backslash, "\n": _newline, "#": _comment}

    def _token(self) -> tuple:
        """A redirection, an operator or a word (`((...))` arithmetic is one word)."""
        start = self.i
        if match := _REDIRECT.match(self.text, self.i):
            return "redirect", self._redirect(match), self.line, start
        if self.text.startswith("((", self.i) and not self.text.startswith("((", self.i + 1):
            self.i = _arithmetic_end(self.text, self.i)
            return "word", self.text[start:self.i], self.line, start
        if op := _operator_at(self.text, self.i):
            self.i += len(op)
            return "op", op, self.line, start
        return self._word_token()

    def _word_token(self) -> tuple:
        start_line, start = self.line, self.i
        self.budget.step()
        return "word", self._word(), start_line, start

    def _skip_blank_lines(self) -> None:
        """Blank and comment lines after a newline: one separator, read at C speed."""
        match = _BLANK_LINES.match(self.text, self.i)
        if match:
            self.line += match.group(0).count("\n")
            self.i = match.end()

    def _word(self) -> str:
        text, start = self.text, self.i
        while self.i < len(text) and not self._word_ends(start):
            end = _part_end(text, self.i)
            self.line += text.count("\n", self.i, end)
            self.i = end
        return text[start:self.i]

    def _word_ends(self, start: int) -> bool:
        """Whether text[i] ends the word that began at `start` (a `(` only ends one that is not
        `NAME=`, whose array follows)."""
        char = self.text[self.i]
        if char == "(":
            return not _ARRAY_ASSIGNMENT.fullmatch(self.text, start, self.i)
        return char in _WORD_ENDS

    def _redirect(self, match: re.Match) -> list:
        self.i = match.end()
        operator = match.group(2)
        while self.i < len(self.text) and self.text[self.i] in " \t":
            self.i += 1
        target = self._word()
        token = [operator, target, None]
        if operator in ("<<", "<<-"):
            quoted = any(q in target for q in "'\"\\")
            self.pending.append([re.sub(r"['\"\\]", "", target), operator == "<<-", quoted, token])
        return token

    def _read_heredocs(self) -> None:
        for delimiter, strip, quoted, token in self.pending:
            body = self._heredoc_lines(delimiter, strip)
            token[2] = ("\n".join(body) + "\n" if body else "", not quoted)
        self.pending = []

    def _heredoc_lines(self, delimiter: str, strip: bool) -> list[str]:
        """A here-document's lines up to its delimiter (leading tabs stripped for `<<-`)."""
        body = []
        while self.i < len(self.text):
            line = self._next_line()
            if strip:
                line = line.lstrip("\t")
            if line == delimiter:
                break
            body.append(line)
        return body

    def _next_line(self) -> str:
        end = self.text.find("\n", self.i)
        end = len(self.text) if end < 0 else end
        line = self.text[self.i:end]
        self.i, self.line = end + 1, self.line + 1
        return line
