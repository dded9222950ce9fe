"""if/elif/else and case as the walk (walk.py) reads them: the branch bash would take when the
script's own values decide it; every branch that may run, merged, when only the job knows. Loops
are read flat (shell.py), each command knowing the loops around it: a loop's variable, and one a loop
sets read after it, are what only the job knows (bash(1) "Looping Constructs")."""

from __future__ import annotations

import re
from typing import Optional

from .budget import matches
from .builtins import evaluate_test
from .evaluate import PASS_THROUGH
from .shell import Case, Command, If, Node

# The value of a variable that branches the script cannot decide between set differently, one of
# them from what only the job knows: it reads like a command's output (`lookup` keeps `$NAME` as
# written, counts stay unknown).
RUN_TIME_VALUE = "$(...)"
_JOB_COMPUTED = re.compile(r"\$\(|`")  # arithmetic or a command's output left for the job
UNEXPANDED = re.compile(r"[$`]")  # a word still naming what only the job knows
_MISSING = object()  # a variable one branch leaves unset
_TESTS = ("[", "[[", "test")


class Branches:
    """The walk's Shell reading if and case statements and loops (it provides run, expand, vars, looped,
    around)."""

    def _loop_variables(self, cmd: Command) -> None:
        """A loop's variable holds each of its values in turn: read flat, the body sees none of them
        (its expansions are kept for the job, `--config=prefix_${v}`), not one set before the loop."""
        for loop in cmd.loops:
            if loop.keyword in ("for", "select") and loop.words and loop.words[0] in self.vars:
                del self.vars[loop.words[0]]

    def _after_its_loop(self, name: str) -> bool:
        """Whether `name` was set inside a loop the command being read is not in: which pass set it last
        only the run shows. Its value is then the one from before the loop (a submission with no
        arguments makes no pass of a `while` over "$@", as a branch's default is read), or unknown."""
        return name in self.looped and not {id(loop) for loop in self.looped[name][0]} <= {id(loop) for loop in self.around}

    def _before_loop(self, name: str):
        """`name`'s value before the loops of the command being read assign it (read flat, its own value
        in its own loop, `X="$X,$i"`, is as before)."""
        earlier = self.looped.pop(name, None)
        return earlier[1] if earlier else self.lookup(name)

    def _set_in_loop(self, name: str, before) -> None:
        if self.around:
            self.looped[name] = (self.around, before)

    def _if(self, node: If) -> None:
        """The branch bash takes when the tests are decided by the script's own values; every
        branch that may run, in order, when one is not (the launch may be in any of them)."""
        bodies = self._possible_bodies(node)
        if len(bodies) == 1:
            self.run(bodies[0])
        else:
            self._undecided(bodies, False)

    def _possible_bodies(self, node: If) -> list:
        """The bodies that may run: those of undecided tests up to the first test that holds, or
        with the else body when none does."""
        possible = []
        for condition, body in node.branches:
            taken = self._test(condition)
            if taken is not False:
                possible.append(body)
            if taken:
                return possible
        return [*possible, node.otherwise]

    def _case(self, node: Case) -> None:
        """The clause whose pattern matches the word, as bash matches it (glob patterns, `a|b`);
        every clause when the word is only known to the job."""
        word = self._case_word(node)
        if word is None:
            catch_all = any(p == "*" for patterns in node.patterns for p in patterns)
            self._undecided([body for _, body in node.branches], not catch_all)
        else:
            self.run(self._matching_clause(node, word))

    def _case_word(self, node: Case) -> Optional[str]:
        """The case's word when the script knows it; None when only the job does."""
        fields = self.expand.fields(node.word) if node.word else [""]
        if len(fields) != 1 or UNEXPANDED.search(fields[0]):
            return None
        return fields[0]

    def _matching_clause(self, node: Case, word: str) -> list[Node]:
        """The body of the first clause whose patterns match `word`; none when no clause does."""
        for patterns, (_, body) in zip(node.patterns, node.branches):
            if any(matches(word, self.expand.string(p)) for p in patterns):
                return body
        return []

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
        self.vars = _merged(outcomes)
        for name in [name for name, value in self.vars.items() if value == RUN_TIME_VALUE]:  # for the header's note
            self.candidates[name] = list(dict.fromkeys(v for o in outcomes if isinstance(v := o.get(name), str)))

    def _test(self, condition: list[Node]) -> Optional[bool]:
        """The outcome of `[ ... ]`, `[[ ... ]]` or `test ...` over known values; None otherwise."""
        operands = _test_operands(condition)
        if operands is None:
            return None
        values = []
        for word in operands:
            value = self._test_value(word)
            if value is None:
                return None
            values.append(value)
        return evaluate_test(values)

    def _test_value(self, word: str) -> Optional[str]:
        """One operand of a test, expanded; None when only the job knows it."""
        fields = self._test_fields(word)
        if len(fields) != 1 or _left_for_the_job(fields[0], word):
            return None
        return fields[0]

    def _test_fields(self, word: str) -> list[str]:
        """The fields of a test's operand. The top-level script is read as run without arguments
        (`${1:-x}` is x, "$@" is empty): a test sees its arguments empty, as bash would."""
        fields = self.expand.fields(word) or [""]
        if self.arguments_known or len(fields) != 1 or "'" in word:
            return fields
        return [_without_arguments(fields[0])]


def _test_operands(condition: list[Node]) -> Optional[list[str]]:
    """The words of a lone `[ ... ]`, `[[ ... ]]` or `test ...` command, brackets left off; None
    for any other condition."""
    command = only_command(condition)
    words = command.words if command is not None else []
    if not words or words[0] not in _TESTS:
        return None
    return words[1:len(words) - (words[0] != "test")]


def only_command(nodes: list[Node]) -> Optional[Command]:
    """The simple command `nodes` consist of; None when they are anything else."""
    return nodes[0] if len(nodes) == 1 and isinstance(nodes[0], Command) else None


def _without_arguments(value: str) -> str:
    """`value` as bash sees it in a script run without arguments: $1... empty, $# zero."""
    value = re.sub(r"\$(?:\{\d+\}|\d)", "", value.replace(PASS_THROUGH, ""))
    return re.sub(r"\$(?:\{#\}|#)", "0", value)


def _left_for_the_job(value: str, word: str) -> bool:
    """Whether the expanded `value` still holds a `$` the word did not single-quote."""
    return "$" in value and not re.fullmatch(r"'.*'", word)


def _merged(outcomes: list[dict]) -> dict:
    """The variables after branches that left `outcomes` (see Branches._undecided)."""
    merged = {}
    for name in set().union(*outcomes):
        chosen = _merged_value([outcome.get(name, _MISSING) for outcome in outcomes])
        if chosen is not _MISSING:
            merged[name] = chosen
    return merged


def _merged_value(values: list):
    if all(value == values[0] for value in values):
        return values[0]
    if any(_job_computed(value) for value in values):
        return RUN_TIME_VALUE
    return values[-1]


def _job_computed(value) -> bool:
    return isinstance(value, str) and bool(_JOB_COMPUTED.search(value))
