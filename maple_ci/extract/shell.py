"""The part of bash's grammar extraction needs: a script as a list of simple commands whose words
are kept as written (quotes included, so `evaluate` can expand them by bash's own rules), with
their redirections, here-documents and function definitions.

Control flow is flattened: the commands of every branch and loop body are listed in order, as a
reader scanning for the launch line would; each command keeps the loops around it (bash(1)
"Looping Constructs"), so that a launch a loop repeats is carried with its loop or named. `bash -n` has accepted the text before it gets here, so
the lexer never has to report a syntax error; on text bash would reject it still ends.
"""

from __future__ import annotations

import re
import subprocess
from functools import lru_cache
from dataclasses import dataclass, field
from typing import Optional, Union

from .budget import Budget
from .lexer import Lexer

_SKIPPED_KEYWORDS = {"!", "esac", "}"}
_CASE_CLAUSE_ENDS = (";;", ";&", ";;&")


@dataclass
class Loop:
    """A `for`/`select`/`while`/`until` loop around commands, as written."""

    keyword: str
    line: int
    words: list = field(default_factory=list)  # for/select: NAME `in` WORDS..., or the one ((init; test; step)) word
    condition: list = field(default_factory=list)  # while/until: the commands of the test
    redirects: list = field(default_factory=list)  # after `done`: the loop's input (`done <<< "$LIST"`, `done < f`)
    heredoc: Optional[tuple] = None  # (body, whether its $-expansions run) for `done <<EOF`
    header: bool = True  # still reading its words or test (until `do`)


@dataclass
class Command:
    words: list[str]  # as written: quotes, $VAR and $(...) untouched
    line: int
    redirects: list[tuple[str, str]] = field(default_factory=list)  # (operator, target as written)
    heredoc: Optional[tuple[str, bool]] = None  # (body, whether its $-expansions run)
    starts: list[int] = field(default_factory=list)  # where each word begins in the text (the verifier's edits)
    piped: bool = False  # its output is the next command's input (`cat <<EOF | sbatch`)
    loops: tuple = ()  # the loops around it, outermost first


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


@lru_cache(maxsize=32)  # a port's checks read the same port twice (read-back, world size): one bash -n each
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


def parse(text: str, budget: Optional[Budget] = None) -> list[Node]:
    """The commands of `text`, in order, with function bodies kept apart as Function nodes; each
    word read is a step of `budget` (the script's, shared with what it evals and sources)."""
    budget = budget or Budget()
    budget.spend(len(text))  # a text parsed again and again (`bash f.sh` in a loop of calls) is text read
    return _Parser(list(Lexer(text, budget).tokens())).block(set())


@dataclass
class _Block:
    """The nodes of one command list being read, and the simple command being gathered."""

    until: set  # the words (or `)`, `;;`) that end the list at a command start
    loops: list  # the parser's open loops, innermost last
    nodes: list = field(default_factory=list)
    words: list = field(default_factory=list)
    starts: list = field(default_factory=list)
    redirects: list = field(default_factory=list)
    heredoc: Optional[tuple] = None
    line: int = 0  # where the current command's first word is (kept past a flush, as bash's reader does)
    skip_to_separator: bool = False  # inside `for NAME in ...` / `select ...`: not a command
    ended: bool = False

    def flush(self, piped: bool = False) -> None:
        if self.words or self.redirects:
            command = Command(self.words, self.line, self.redirects, self.heredoc, self.starts, piped, tuple(self.loops))
            self.nodes.append(command)
            if self.loops and self.loops[-1].header:  # a while/until test
                self.loops[-1].condition.append(command)
        self.words, self.starts, self.redirects, self.heredoc = [], [], [], None

    def ends_at(self, operator: str) -> bool:
        """Whether `operator` closes this list: the `)` of a subshell, the `;;` of a case clause."""
        if operator == ")":
            return ")" in self.until
        return operator in _CASE_CLAUSE_ENDS and ";;" in self.until


class _Parser:
    """Nodes from the lexer's tokens; `i` is the index of the next token to read."""

    def __init__(self, tokens: list):
        self.tokens, self.i = tokens, 0
        self.loops: list[Loop] = []  # open loops, innermost last
        self.closed: Optional[Loop] = None  # the loop whose `done` was just read: its redirects follow

    def block(self, until: set) -> list[Node]:
        """Commands until a word in `until` ("}", "then", "fi"...) at a command start, a `)` or `;;`
        that `until` names, or the end; `i` ends just past what ended the list."""
        block = _Block(until, self.loops)
        while self.i < len(self.tokens) and not block.ended:
            kind, value, at, offset = self.tokens[self.i]
            self.i += 1
            self._READERS[kind](self, block, value, at, offset)
        block.flush()
        return block.nodes

    def _operator(self, block: _Block, value: str, at: int, offset: int) -> None:
        self.closed = None
        if block.ends_at(value):
            block.ended = True
        elif value == "(" and not block.words:  # a subshell: its commands run like any others
            block.nodes.extend(self.block({")"}))
        else:
            block.flush(piped=value in ("|", "|&"))
            block.skip_to_separator = block.skip_to_separator and value not in ("\n", ";")

    def _redirect(self, block: _Block, value: tuple, at: int, offset: int) -> None:
        operator, target, body = value
        if self.closed is not None:  # `done < file`: the loop's input
            self.closed.redirects.append((operator, target))
            self.closed.heredoc = body or self.closed.heredoc
            return
        block.redirects.append((operator, target))
        block.heredoc = body or block.heredoc

    def _word(self, block: _Block, value: str, at: int, offset: int) -> None:
        self.closed = None
        if block.skip_to_separator:
            if self.loops and self.loops[-1].header and self.loops[-1].keyword in ("for", "select"):
                self.loops[-1].words.append(value)
            return
        if block.words or not self._command_start(block, value, at, offset):
            block.words.append(value)
            block.starts.append(offset)

    _READERS = {"op": _operator, "redirect": _redirect, "word": _word}

    def _command_start(self, block: _Block, value: str, at: int, offset: int) -> bool:
        """A word where a command starts: the end of the list, a compound command or a function
        definition read here (True), or the command's own first word (False)."""
        block.line = at
        if value in block.until:
            block.ended = True
        elif value in self._COMPOUND:
            self._COMPOUND[value](self, block)
        elif value.startswith("(("):
            block.nodes.append(Command([value], at, starts=[offset], loops=tuple(self.loops)))
        elif value not in _SKIPPED_KEYWORDS:
            return self._function(block, at)
        return True

    def _if(self, block: _Block) -> None:
        block.nodes.append(self._if_statement())

    def _case(self, block: _Block) -> None:
        block.nodes.append(self._case_statement())

    def _group(self, block: _Block) -> None:
        """{ ...; }: nested, so its `}` does not end an enclosing function body."""
        block.nodes.extend(self.block({"}"}))

    def _loop_header(self, block: _Block) -> None:
        self.loops.append(Loop(self.tokens[self.i - 1][1], block.line))
        block.skip_to_separator = self.loops[-1].keyword in ("for", "select")

    def _do(self, block: _Block) -> None:
        if self.loops:
            self.loops[-1].header = False

    def _done(self, block: _Block) -> None:
        if self.loops:
            self.closed = self.loops.pop()

    _COMPOUND = {"if": _if, "case": _case, "{": _group, "for": _loop_header, "select": _loop_header,
                 "while": _loop_header, "until": _loop_header, "do": _do, "done": _done}

    def _if_statement(self) -> If:
        """The if statement whose `if` was just read; `i` ends past its `fi`."""
        node = If([], [])
        ending = "elif"
        while ending == "elif":
            condition = self.block({"then"})
            node.branches.append((condition, self.block({"elif", "else", "fi"})))
            # an `elif` ending the text (an eval'd string bash -n never saw) opens no branch: without
            # this the loop would read empty branches for ever
            ending = self._value(self.i - 1, "fi") if self.i < len(self.tokens) else "fi"
        if ending == "else":
            node.otherwise = self.block({"fi"})
        return node

    def _case_statement(self) -> Case:
        """The case statement whose `case` was just read; `i` ends past its `esac`."""
        node = Case([], [], word=self._case_word())
        while self.i < len(self.tokens):
            if self._at("op", "\n", "(", ";"):
                self.i += 1
            elif self._at("word", "esac"):
                self.i += 1
                break
            elif self._clause(node):
                break
        return node

    def _case_word(self) -> str:
        """The word of `case WORD in`; `i` ends past the `in`."""
        word = ""
        while self.i < len(self.tokens) and not self._at("word", "in"):
            if self.tokens[self.i][0] == "word" and not word:
                word = self.tokens[self.i][1]
            self.i += 1
        self.i += 1
        return word

    def _clause(self, node: Case) -> bool:
        """One `PATTERN) commands ;;` clause of `node`; True when it ended the case statement."""
        node.patterns.append(self._patterns())
        node.branches.append(([], self.block({"esac", ";;"})))
        return self.tokens[self.i - 1][1] == "esac" or self.i >= len(self.tokens)

    def _patterns(self) -> list[str]:
        """A case clause's patterns, as written; `i` ends past their `)`."""
        patterns = []
        while self.i < len(self.tokens) and not self._at("op", ")"):
            if self.tokens[self.i][0] == "word":
                patterns.append(self.tokens[self.i][1])
            self.i += 1
        self.i += 1
        return patterns

    def _function(self, block: _Block, at: int) -> bool:
        """`name() {`, `function name {`, `function name() {` and the body: True when one was read."""
        header = self._keyword_function(self.i - 1) or self._function_name(self.i - 1)
        if header is None:
            return False
        name, self.i = header
        block.nodes.append(Function(name, self._body(), at))
        return True

    def _keyword_function(self, i: int) -> Optional[tuple[str, int]]:
        """(name, index of the body's first token) for `function name` and `function name()`."""
        if self.tokens[i][1] != "function" or not self._is(i + 1, "word"):
            return None
        if self._is(i + 2, "op", "(") and self._is(i + 3, "op", ")"):
            return self.tokens[i + 1][1], i + 4
        return self.tokens[i + 1][1], i + 2

    def _function_name(self, i: int) -> Optional[tuple[str, int]]:
        """(name, index of the body's first token) for `name()`."""
        if re.fullmatch(r"[\w.:-]+", self.tokens[i][1]) and self._is(i + 1, "op", "(") and self._is(i + 2, "op", ")"):
            return self.tokens[i][1], i + 3
        return None

    def _body(self) -> list[Node]:
        """A function's body: a `{ ... }` group or a `( ... )` subshell, after any newlines."""
        while self._value(self.i) == "\n":
            self.i += 1
        opener = self._value(self.i)
        if opener not in ("{", "("):
            return []
        self.i += 1
        return self.block({"}" if opener == "{" else ")"})

    def _value(self, j: int, default: Optional[str] = None):
        """tokens[j]'s value; `default` past the last token."""
        return self.tokens[j][1] if j < len(self.tokens) else default

    def _is(self, j: int, kind: str, value: Optional[str] = None) -> bool:
        """Whether tokens[j] exists, is of `kind` and, when given, is `value`."""
        if j >= len(self.tokens):
            return False
        return self.tokens[j][0] == kind and value in (None, self.tokens[j][1])

    def _at(self, kind: str, *values: str) -> bool:
        """Whether the next token is of `kind` and one of `values`."""
        return self._is(self.i, kind) and self.tokens[self.i][1] in values
