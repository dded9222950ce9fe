"""Words from a user's script as the port writes them (synthesize.py's module docstring says which
filter goes where): shell_word for values whose expansion is part of their meaning, directive_word
for scheduler directives, comment for header lines."""

import re
import shlex

from .errors import MapleError
from .extract.evaluate import PASS_THROUGH
from .programs import carried

_DIRECTIVE_WORD = re.compile(r"[A-Za-z0-9_.,:=+/@%-]+")
# A plain parameter expansion: $NAME, ${NAME}, or ${NAME:-default} with a default that needs no
# quoting rules inside double quotes (no $, backtick, backslash, quote or brace), or a positional
# parameter ($1, ${10}): the job's own argument, which the port takes as the source did. Not $((...)):
# bash evaluates the variables in it as expressions too, `a[$(cmd)]` included.
_EXPANSION = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*(?::-[^$`\\\"'{}]*)?\}|[1-9]|\{[1-9][0-9]*\})")
# Arithmetic over the port's own node count only ($((NNODES * 4)), a translated $SLURM_NTASKS), and the
# count Slurm sets for a node's CPUs (a translated job-wide CPU count): the port sets NNODES to a number,
# slurmd sets SLURM_CPUS_ON_NODE to one, so bash computes it (nested too) at run time and runs nothing else.
_SIZE_ARITHMETIC = re.compile(r"\$\(\((?=[^)]*\bNNODES\b)(?:[\d\s+*/%()-]|\$\(\(|\bNNODES\b|\bSLURM_CPUS_ON_NODE\b)+\)\)")



def comment(text: str) -> str:
    # Header values come from user input; a newline would end the comment and start a command.
    return re.sub(r"[\x00-\x1f\x7f]", "?", str(text))


def shell_word(value) -> str:
    """`value` as one shell word that keeps the value's plain parameter expansions (_EXPANSION)
    and, at its start, `~/`: those mean the target's own $SCRATCH or home. The word goes in double
    quotes when, the expansions aside, nothing in it is special there ($, backtick, backslash,
    double quote); otherwise it is quoted literally (shlex.quote), so command substitution,
    arithmetic and other ${...} forms from a user's script are never run."""
    text = str(value)
    if text == PASS_THROUGH:  # the job's own arguments, passed on as the source passes them
        return text
    if text.startswith("~/"):
        # Tilde expansion needs the ~ and its slash unquoted.
        return "~/" + shell_word(text[2:]) if text[2:] else text
    text = carried(text)
    rest = _SIZE_ARITHMETIC.sub("", _EXPANSION.sub("", text))
    if rest != text and not re.search(r'[$`\\"]', rest):
        return f'"{text}"'
    return shlex.quote(text)


def directive_word(value) -> str:
    text = str(value)
    if not _DIRECTIVE_WORD.fullmatch(text):
        raise MapleError(f"{text!r} cannot be used in a scheduler directive: only letters, digits and _.,:=+/@%- are allowed")
    return text
