"""The part of bash's grammar extraction needs: a script as a list of simple commands whose words
are kept as written (quotes included, so `evaluate` can expand them by bash's own rules), with
their redirections, here-documents and function definitions.

Control flow is flattened: the commands of every branch and loop body are listed in order, as a
reader scanning for the launch line would. `bash -n` has accepted the text before it gets here, so
the lexer never has to report a syntax error; on text bash would reject it still ends.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from typing import Optional, Union

from .budget import Budget

_OPERATORS = ("&&", "||", ";;&", ";;", ";&", "|&", ";", "&", "|", "(", ")")
_REDIRECT = re.compile(r"(\d*|&)(<<<|<<-|<<|>>|>&|<&|&>>|&>|>\||<>|<|>)")
_ARRAY_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*(?:\[[^\]]*\])?\+?=")
_BLANK_LINES = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\n)+")  # blank lines and comment lines
_SKIPPED_KEYWORDS = {"do", "while", "until", "!", "done", "esac", "}"}


@dataclass
class Command:
    words: list[str]  # as written: quotes, $VAR and $(...) untouched
    line: int
    redirects: list[tuple[str, str]] = field(default_factory=list)  # (operator, target as written)
    heredoc: Optional[tuple[str, bool]] = None  # (body, whether its $-expansions run)
    starts: list[int] = field(default_factory=list)  # where each word begins in the text (the verifier's edits)


@dataclass
class If:
    """if/elif/else: (condition, body) pairs, then the else body; the walk takes the branch bash
    would take when the conditions can be decided, else it reads them all."""

    branches: list[tuple[list["Node"], list["Node"]]]
    otherwise: list["Node"]


@dataclass
class Case(If):
    """case WORD in PATTERN) ... ;; esac: an If whose branches are the clauses (their conditions
    empty) with the word and each clause's patterns, as written; the walk takes the clause bash
    would take when the word is known, else it reads them all."""

    word: str = ""
    patterns: list = field(default_factory=list)  # one list of patterns per branch


@dataclass
class Function:
    name: str
    body: list["Node"]
    line: int


Node = Union[Command, Function, If, Case]


def bash_syntax_error(text: str) -> Optional[str]:
    """bash's own complaint about `text` (bash -n parses, nothing runs): '' when bash accepts it,
    None when there is no bash to ask."""
    try:
        result = subprocess.run(["bash", "-n", "/dev/stdin"], input=text, capture_output=True,
                                encoding="utf-8", errors="replace", timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode == 0:
        return ""
    first = result.stderr.strip().splitlines()[0] if result.stderr.strip() else "syntax error"
    return first.replace("/dev/stdin: ", "", 1)


def closing(text: str, start: int, open_: str = "(", close: str = ")") -> int:
    """Index just past the bracket that closes the one at `start`, skipping quoted text; len(text)
    when none does."""
    depth, i = 0, start
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char in "'\"`" and open_ != "'":
            i = _quote_end(text, i)
            continue
        if char == open_:
            depth += 1
        elif char == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def _quote_end(text: str, i: int) -> int:
    """Index just past the quoted part starting at text[i] ('...', "...", `...`)."""
    quote = text[i]
    i += 1
    while i < len(text) and text[i] != quote:
        if text[i] == "\\" and quote != "'":
            i += 1
        elif quote == '"' and text.startswith("$(", i):
            i = closing(text, i + 1) - 1
        i += 1
    return i + 1


class _Lexer:
    """Tokens: ("word", raw), ("op", operator or newline), ("redirect", (operator, target, heredoc))."""

    def __init__(self, text: str, budget: Budget):
        self.text, self.i, self.line, self.budget = text, 0, 1, budget
        self.pending: list[list] = []  # here-documents waiting for the end of the line: [delimiter, strip, quoted, token]

    def tokens(self):
        text = self.text
        while self.i < len(text):
            char = text[self.i]
            if char in " \t":
                self.i += 1
            elif text.startswith("\\\n", self.i):
                self.i += 2
                self.line += 1
            elif char == "\n":
                self.i += 1
                self.line += 1
                self._read_heredocs()
                yield "op", "\n", self.line - 1, self.i - 1
                self._skip_blank_lines()
            elif char == "#":
                end = text.find("\n", self.i)
                self.i = len(text) if end < 0 else end
            elif match := _REDIRECT.match(text, self.i):
                start = self.i
                yield "redirect", self._redirect(match), self.line, start
            elif text.startswith("((", self.i) and not text.startswith("((", self.i + 1):
                end = text.find("))", self.i)
                end = len(text) if end < 0 else end + 2
                yield "word", text[self.i:end], self.line, self.i
                self.i = end
            elif op := next((op for op in _OPERATORS if text.startswith(op, self.i)), None):
                self.i += len(op)
                yield "op", op, self.line, self.i - len(op)
            else:
                start_line, start = self.line, self.i
                self.budget.step()
                word = self._word()
                yield "word", word, start_line, start

    def _skip_blank_lines(self) -> None:
        """Blank and comment lines after a newline: one separator, read at C speed."""
        match = _BLANK_LINES.match(self.text, self.i)
        if match:
            self.line += match.group(0).count("\n")
            self.i = match.end()

    def _word(self) -> str:
        text, start = self.text, self.i
        while self.i < len(text):
            char = text[self.i]
            if char in " \t\n;&|<>)" or (char == "(" and not _ARRAY_ASSIGNMENT.fullmatch(text[start:self.i])):
                break
            if char == "(":  # NAME=( ... ): the array's words belong to the assignment
                end = closing(text, self.i)
            elif char == "\\":
                end = self.i + 2
            elif char in "'\"`":
                end = _quote_end(text, self.i)
            elif text.startswith("$((", self.i):
                end = text.find("))", self.i)
                end = len(text) if end < 0 else end + 2
            elif text.startswith("$(", self.i):
                end = closing(text, self.i + 1)
            elif text.startswith("${", self.i):
                end = closing(text, self.i + 1, "{", "}")
            else:
                end = self.i + 1
            self.line += text.count("\n", self.i, end)
            self.i = end
        return text[start:self.i]

    def _redirect(self, match: re.Match) -> tuple:
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
            body = []
            while self.i < len(self.text):
                end = self.text.find("\n", self.i)
                end = len(self.text) if end < 0 else end
                line = self.text[self.i:end]
                self.i, self.line = end + 1, self.line + 1
                if (line.lstrip("\t") if strip else line) == delimiter:
                    break
                body.append(line.lstrip("\t") if strip else line)
            token[2] = ("\n".join(body) + "\n" if body else "", not quoted)
        self.pending = []


def parse(text: str, budget: Optional[Budget] = None) -> list[Node]:
    """The commands of `text`, in order, with function bodies kept apart as Function nodes; each
    word read is a step of `budget` (the script's, shared with what it evals and sources)."""
    budget = budget or Budget()
    budget.spend(len(text))  # a text parsed again and again (`bash f.sh` in a loop of calls) is text read
    nodes, _ = _parse(list(_Lexer(text, budget).tokens()), 0, None)
    return nodes


def _parse(tokens: list, i: int, until) -> tuple[list[Node], int]:
    """Commands from tokens[i] until a word in `until` ("}", ")", "then", "fi"...) at a command
    start, or the end; the index returned is just past that word."""
    until = {until} if isinstance(until, str) else until or set()
    nodes: list[Node] = []
    words: list[str] = []
    starts: list[int] = []
    redirects: list[tuple[str, str]] = []
    heredoc, line = None, 0
    skip_to_separator = False

    def flush():
        nonlocal words, starts, redirects, heredoc
        if words or redirects:
            nodes.append(Command(words, line, redirects, heredoc, starts))
        words, starts, redirects, heredoc = [], [], [], None

    while i < len(tokens):
        kind, value, at, offset = tokens[i]
        i += 1
        if kind == "op":
            if value == ")" and ")" in until:
                flush()
                return nodes, i
            if value == "(" and not words:  # a subshell: its commands run like any others
                inner, i = _parse(tokens, i, ")")
                nodes.extend(inner)
                continue
            if value in (";;", ";&", ";;&") and ";;" in until:  # the end of a case clause
                flush()
                return nodes, i
            flush()
            skip_to_separator = skip_to_separator and value not in ("\n", ";")
            continue
        if kind == "redirect":
            operator, target, body = value
            redirects.append((operator, target))
            heredoc = body or heredoc
            continue
        if skip_to_separator:
            continue
        if not words:
            line = at
            if value in until:
                flush()
                return nodes, i
            if value == "if":
                nodes.append(_if(tokens, i))
                i = nodes[-1].end
                continue
            if value == "{":  # a group: nested, so its `}` does not end an enclosing function body
                inner, i = _parse(tokens, i, "}")
                nodes.extend(inner)
                continue
            if value == "case":
                nodes.append(_case(tokens, i))
                i = nodes[-1].end
                continue
            if value in ("for", "select"):
                skip_to_separator = True
                continue
            if value in _SKIPPED_KEYWORDS or value.startswith("(("):
                if value.startswith("(("):
                    nodes.append(Command([value], at, starts=[offset]))
                continue
            function = _function_header(tokens, i - 1)
            if function:
                name, body_start = function
                body, i = _body(tokens, body_start)
                nodes.append(Function(name, body, at))
                continue
        words.append(value)
        starts.append(offset)
    flush()
    return nodes, i


def _if(tokens: list, i: int) -> If:
    """The if statement whose `if` was just read; its `end` is the index past its `fi`."""
    node = If([], [])
    while True:
        condition, i = _parse(tokens, i, {"then"})
        body, i = _parse(tokens, i, {"elif", "else", "fi"})
        node.branches.append((condition, body))
        ending = tokens[i - 1][1] if i - 1 < len(tokens) else "fi"
        if ending == "else":
            node.otherwise, i = _parse(tokens, i, {"fi"})
            break
        if ending != "elif":
            break
    node.end = i
    return node


def _case(tokens: list, i: int) -> Case:
    """The case statement whose `case` was just read; its `end` is the index past its `esac`."""
    node = Case([], [])
    while i < len(tokens) and not (tokens[i][0] == "word" and tokens[i][1] == "in"):
        if tokens[i][0] == "word" and not node.word:
            node.word = tokens[i][1]
        i += 1
    i += 1
    while i < len(tokens):
        kind, value = tokens[i][0], tokens[i][1]
        if kind == "op" and value in ("\n", "(", ";"):
            i += 1
            continue
        if kind == "word" and value == "esac":
            i += 1
            break
        patterns = []
        while i < len(tokens) and not (tokens[i][0] == "op" and tokens[i][1] == ")"):
            if tokens[i][0] == "word":
                patterns.append(tokens[i][1])
            i += 1
        body, i = _parse(tokens, i + 1, {"esac", ";;"})
        node.branches.append(([], body))
        node.patterns.append(patterns)
        if tokens[i - 1][1] == "esac" or i >= len(tokens):
            break
    node.end = i
    return node


def _function_header(tokens: list, i: int) -> Optional[tuple[str, int]]:
    """(name, index of the body's first token) for `name() {`, `function name {`, `function name() {`."""
    def op(j, value):
        return j < len(tokens) and tokens[j][0] == "op" and tokens[j][1] == value

    if tokens[i][1] == "function" and i + 1 < len(tokens) and tokens[i + 1][0] == "word":
        j = i + 2
        if op(j, "(") and op(j + 1, ")"):
            j += 2
        return tokens[i + 1][1], j
    if re.fullmatch(r"[\w.:-]+", tokens[i][1]) and op(i + 1, "(") and op(i + 2, ")"):
        return tokens[i][1], i + 3
    return None


def _body(tokens: list, i: int) -> tuple[list[Node], int]:
    while i < len(tokens) and tokens[i][1] == "\n":
        i += 1
    if i < len(tokens) and tokens[i][1] == "{":
        return _parse(tokens, i + 1, "}")
    if i < len(tokens) and tokens[i][1] == "(":
        return _parse(tokens, i + 1, ")")
    return [], i
