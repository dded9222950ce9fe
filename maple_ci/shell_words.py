"""Words from a user's script as the port writes them (synthesize.py's module docstring says which
filter goes where): shell_word for values whose expansion is part of their meaning, directive_word
for scheduler directives, comment for header lines."""

import re
import shlex

from .errors import MapleError
from .extract.evaluate import PASS_THROUGH
from .programs import carried
from . import schedulers

_DIRECTIVE_WORD = re.compile(r"[A-Za-z0-9_.,:=+/@%-]+")
# A plain parameter expansion: $NAME, ${NAME}, or ${NAME} with one of bash's default operators
# (${NAME:-word}, ${NAME-word}, ${NAME:=word}; bash(1) "Parameter Expansion"; not ${NAME:+word},
# whose empty value an unquoted source drops as a word and the port's quotes would keep) whose word
# holds only plain text and plain $NAME expansions (no backtick, backslash, quote or brace), or a
# positional parameter ($1, ${10}, ${1:-default}): the job's own argument, which the port takes as the
# source did. Not $((...)): bash evaluates the variables in it as expressions too, `a[$(cmd)]` included.
# A default may itself hold one such defaulted expansion (${EXP:-x_${B:-256}}): the submitter's
# environment decides both, and bash expands them without running anything.
_PLAIN_DEFAULT = r"(?::?[-=](?:[^$`\\\"'{}]|\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\})*)?"
_EXPANSION = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|[1-9]|\{(?:[A-Za-z_][A-Za-z0-9_]*|[1-9][0-9]*)"
                        r"(?::?[-=](?:[^$`\\\"'{}]|\$[A-Za-z_][A-Za-z0-9_]*|\$\{(?:[A-Za-z_][A-Za-z0-9_]*|[1-9][0-9]*)"
                        + _PLAIN_DEFAULT + r"\})*)?\})")
# An element of an array the port writes before its launch (JobIntent.arrays): `${NAME[SUBSCRIPT]}` whose
# subscript is arithmetic over numbers and plain names only, so bash works it out as on the source and
# runs nothing (bash(1) "Arrays"); the names are a loop's plain values or the scheduler's numbers.
_ELEMENT = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\[(?:[\w\s+*/%()-]|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)*\]\}")
# The indices the schedulers set for a job array's subjob (SLURM_ARRAY_TASK_ID, PBS_ARRAY_INDEX, ...):
# numbers the scheduler writes, as the node count is.
_JOB_NUMBER = "|".join(name for unit in schedulers.all() for name in unit.job_vars.get("array_index", ()))
# Arithmetic over the port's own node count ($((NNODES * 4)), a translated $SLURM_NTASKS), the count
# Slurm sets for a node's CPUs (a translated job-wide CPU count) and a subjob's index
# ($((PBS_ARRAY_INDEX + 1)), a translated $SLURM_ARRAY_TASK_ID): the port sets NNODES to a number, the
# scheduler sets the others to one, so bash computes it (nested too) at run time and runs nothing else.
_SIZE_ARITHMETIC = re.compile(r"\$\(\((?=[^)]*\b(?:NNODES|" + _JOB_NUMBER + r")\b)(?:[\d\s+*/%()-]|\$\(\(|\$\{?(?:"
                              + _JOB_NUMBER + r")\}?|\b(?:NNODES|SLURM_CPUS_ON_NODE|" + _JOB_NUMBER + r")\b)+\)\)")



def comment(text: str) -> str:
    # Header values come from user input; a newline would end the comment and start a command.
    return re.sub(r"[\x00-\x1f\x7f]", "?", str(text))


def shell_word(value, arrays=()) -> str:
    """`value` as one shell word that keeps the value's plain parameter expansions (_EXPANSION)
    and, at its start, `~/`: those mean the target's own $SCRATCH or home. The word goes in double
    quotes when, the expansions aside, nothing in it is special there ($, backtick, backslash,
    double quote); otherwise it is quoted literally (shlex.quote), so command substitution,
    arithmetic and other ${...} forms from a user's script are never run. An element of one of
    `arrays` (those the port writes) is kept too; of any other array it would be empty there."""
    text = str(value)
    if text == PASS_THROUGH:  # the job's own arguments, passed on as the source passes them
        return text
    if text.startswith("~/"):
        # Tilde expansion needs the ~ and its slash unquoted.
        return "~/" + shell_word(text[2:], arrays) if text[2:] else text
    text = carried(text)
    kept = _ELEMENT.sub(lambda element: "" if element.group(1) in arrays else element.group(0),
                        _SIZE_ARITHMETIC.sub("", text))
    rest = _EXPANSION.sub("", kept)
    if rest != text and not re.search(r'[$`\\"]', rest):
        return f'"{text}"'
    return shlex.quote(text)


def directive_word(value) -> str:
    text = str(value)
    if not _DIRECTIVE_WORD.fullmatch(text):
        raise MapleError(f"{text!r} cannot be used in a scheduler directive: only letters, digits and _.,:=+/@%- are allowed")
    return text
