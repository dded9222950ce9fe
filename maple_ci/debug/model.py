"""What the optional language model is asked about a failure, and how its answer is used: for a
failure no known fix covers, edit operations (debug.EditOp) that debug.next_fix applies and checks
like any fix; for one with several known candidates, their order and why the first (never an edit
of its own). Its words are untrusted: shown as one line of plain text (spoken).

    propose_ops(backend, script, failure_window, cluster_facts) -> Proposal
    rank_candidates(backend, failure_window, candidates) -> Ranking
"""

import json
import re
from collections import Counter
from typing import Annotated, NamedTuple, Union, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import MapleError
from ..llm import Backend
from .kb import EditOp
from .policy import MODEL_OPS, model_refusal

# Prompt budget for small local models (2k tokens of context for the smallest, ~4 characters a
# token, ~900 of them for the op schema): the error window and the script are cut to these sizes.
MAX_WINDOW_CHARS = 1500
MAX_SCRIPT_LINES = 50


# The typed edits a model may propose (policy.MODEL_OPS): the schema it is shown and its answer's.
_MODEL_OPS = tuple(op for op in get_args(get_args(EditOp)[0]) if get_args(op.model_fields["op"].annotation)[0] in MODEL_OPS)
ModelOp = Annotated[Union[_MODEL_OPS], Field(discriminator="op")]


class _Answer(BaseModel):
    """The JSON the model must answer with."""

    model_config = ConfigDict(extra="forbid")

    explanation: str = ""
    ops: list[ModelOp] = Field(min_length=1)


class Proposal(NamedTuple):
    ops: list  # validated EditOps; empty when the answer gave none that can be used
    explanation: str  # the model's own words, or why its answer was refused


def _untitled(schema):
    """A JSON schema without pydantic's "title" labels: they repeat the field names and cost a
    small model's context (the prompt must fit in 2k tokens)."""
    if isinstance(schema, dict):
        return {k: _untitled(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_untitled(v) for v in schema]
    return schema


_SCHEMA = json.dumps(_untitled(_Answer.model_json_schema()), separators=(",", ":"))
_SYSTEM = (
    "You fix batch scripts of deep-learning jobs on HPC GPU clusters. Given the first error of a failed "
    "run and the script, answer with one JSON object and nothing else, matching this JSON schema:\n"
    f"{_SCHEMA}\n"
    'Example: {"explanation": "the partition does not exist", "ops": [{"op": "set_directive", '
    '"name": "--partition", "value": "gpu"}]}\n'
    "Use only these operations. {name} in a value stands for the cluster fact of that name."
)
# A directive or command the ops can address: worth showing the model even in a long script.
_EDITABLE = re.compile(r"^\s*(?:#SBATCH|#PBS|module\s|ml\s|export\s|unset\s|\S*(?:srun|mpiexec|mpirun|torchrun|"
                       r"deepspeed|accelerate|python3?)\b)")  # fmt: skip
_WORD = re.compile(r"[\w./-]{4,}")


def _rare_words(words: list[set[str]], failure_window: str) -> set[str]:
    """The error's words that occur on a few lines of the script only."""
    counts = Counter(w for line_words in words for w in line_words)
    return {w for w in _WORD.findall(failure_window) if counts[w] <= 3}


def _relevant(lines: list[str], failure_window: str) -> list[int]:
    """Indexes of the lines an op can edit or that share a rare word with the error, with neighbours."""
    words = [set(_WORD.findall(line)) for line in lines]
    rare = _rare_words(words, failure_window)
    relevant = [i for i, line in enumerate(lines) if _EDITABLE.match(line) or words[i] & rare]
    return sorted({j for i in relevant for j in (i - 1, i, i + 1) if 0 <= j < len(lines)})[:MAX_SCRIPT_LINES]


def _script_excerpt(script: str, failure_window: str) -> str:
    """The script with line numbers; a long one cut to the lines an op can edit and the lines that
    share a rare word (on a few lines only) with the error, each with its neighbours ("..." marks
    what was left out)."""
    lines = script.split("\n")
    keep = range(len(lines)) if len(lines) <= MAX_SCRIPT_LINES else _relevant(lines, failure_window)
    out, previous = [], -1
    for i in keep:
        if i != previous + 1:
            out.append("...")
        out.append(f"{i + 1:4d}| {lines[i]}")
        previous = i
    return "\n".join(out)


def _messages(script: str, failure_window: str, cluster_facts: dict) -> list[dict]:
    window = failure_window if len(failure_window) <= MAX_WINDOW_CHARS else failure_window[:MAX_WINDOW_CHARS] + "\n..."
    user = (
        f"Cluster facts: {json.dumps(cluster_facts, sort_keys=True)}\n\n"
        f"Error:\n{window}\n\nScript:\n{_script_excerpt(script, failure_window)}\n\nJSON answer:"
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def _json_object(text: str) -> str:
    """The JSON object in an answer: models wrap it in a ```json fence or a sentence."""
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    text = fenced[1] if fenced else text
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else text


def parse_answer(text: str) -> Proposal:
    """The model's answer as validated ops, or no ops and the reason the answer was refused."""
    try:
        answer = _Answer.model_validate_json(_json_object(text))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in exc.errors()[:3])
        return Proposal([], f"the model's answer is not a valid edit ({problems}): {text[:200]!r}")
    for op in answer.ops:
        if why := model_refusal(op):
            return Proposal([], f"the model's edit is refused: {why}")
    return Proposal(answer.ops, spoken(answer.explanation))


MAX_SPOKEN = 400  # characters of a model's explanation that are shown


def spoken(text: str) -> str:
    """A model's words as one line of printable text, cut to MAX_SPOKEN characters: no control
    characters or escape sequences reach a terminal, a log or a comment (which escapes markup)."""
    line = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return line if len(line) <= MAX_SPOKEN else line[: MAX_SPOKEN - 1] + "…"


def propose_ops(backend: Backend, script: str, failure_window: str, cluster_facts: dict) -> Proposal:
    """Ask the model for edit operations that fix the failure. Never raises for a bad or missing
    answer: an endpoint that cannot be reached or an answer outside the op set gives no ops and says why."""
    try:
        text = backend.chat(_messages(script, failure_window, cluster_facts))
    except MapleError as exc:
        return Proposal([], str(exc))
    return parse_answer(text)


# ---------------------------------------------------------------------------------------------
# Ranking the known candidates


class _Order(BaseModel):
    model_config = ConfigDict(extra="forbid")

    order: list[int] = Field(min_length=1)
    explanation: str = ""


class Ranking(NamedTuple):
    order: list[int]  # indexes into the candidates, best first; the knowledge base's order when refused
    explanation: str  # the model's reason for its first, or why its answer was not used


_RANK_SYSTEM = (
    "You rank candidate fixes for the first error of a failed job on an HPC GPU cluster. Answer with one "
    'JSON object and nothing else: {"order": [candidate numbers, best first], "explanation": "why the first"}.'
)


def rank_candidates(backend: Backend, failure_window: str, candidates: list) -> Ranking:
    """The model's order of the knowledge base's candidates (debug.Candidate) and why. The answer
    must be the candidates' numbers, each once; otherwise, or when the endpoint fails, the order
    stays the knowledge base's and the explanation says why."""
    keep = list(range(len(candidates)))
    listed = "\n".join(f"{i + 1}. {json.dumps([op.model_dump() for op in c.ops])}: {c.explanation}" for i, c in enumerate(candidates))
    window = failure_window[:MAX_WINDOW_CHARS]
    messages = [{"role": "system", "content": _RANK_SYSTEM},
                {"role": "user", "content": f"Error:\n{window}\n\nCandidates:\n{listed}\n\nJSON answer:"}]  # fmt: skip
    try:
        text = backend.chat(messages)
        answer = _Order.model_validate_json(_json_object(text))
    except MapleError as exc:
        return Ranking(keep, f"the model did not rank the candidates: {exc}")
    except ValidationError:
        return Ranking(keep, f"the model's ranking is not an order of the candidates: {spoken(text)[:200]!r}")
    if sorted(answer.order) != [i + 1 for i in keep]:
        return Ranking(keep, f"the model's ranking {answer.order} is not each of candidates 1-{len(keep)} once")
    return Ranking([i - 1 for i in answer.order], spoken(answer.explanation))
