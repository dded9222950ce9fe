"""Optional language model for failures the knowledge base has no fix for (MAPLE_LLM).

    backend_from_setting("none" | "transformers:<dir or .gguf>" | "openai:<base-url>") -> Backend | None
    propose_ops(backend, script, failure_window, cluster_facts) -> Proposal

The model only proposes edit operations in the knowledge base's own structured form (debug.EditOp);
debug.next_fix applies them and keeps the patch only if it still parses and passes the static checks.
Local first: a transformers model is read from disk only, never fetched from a hub.
"""

import json
import os
import re
from abc import ABC, abstractmethod
from collections import Counter
from pathlib import Path
from typing import NamedTuple, Optional

import requests
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .debug import EditOp
from .errors import MapleError

MAX_TOKENS = 256  # a few ops in JSON; longer answers are rambling
# Prompt budget for small local models (2k tokens of context for the smallest, ~4 characters a
# token, ~900 of them for the op schema): the error window and the script are cut to these sizes.
MAX_WINDOW_CHARS = 1500
MAX_SCRIPT_LINES = 50
CONNECT_TIMEOUT, READ_TIMEOUT = 10, 300  # seconds; a cold vLLM or Ollama model may load first


class Backend(ABC):
    name: str  # recorded as the fix's source: entry_id "llm:<name>"
    max_tokens: int  # longest answer asked for

    @abstractmethod
    def chat(self, messages: list[dict]) -> str:
        """The model's answer to a chat ([{"role": ..., "content": ...}]); MapleError when it cannot answer."""


class TransformersBackend(Backend):
    """A local model directory or GGUF file, loaded with transformers on first use (GGUF weights are
    dequantised by transformers through the gguf package; the tokenizer comes from the same file)."""

    name = "transformers"

    def __init__(self, path: str, max_tokens: int = MAX_TOKENS):
        self.path = Path(path).expanduser()
        if not self.path.exists():
            raise MapleError(f"MAPLE_LLM: no model at {self.path} (give a model directory or a .gguf file)")
        self.max_tokens = max_tokens
        self._loaded = None

    def _load(self):
        if self._loaded is None:
            from transformers import AutoModelForCausalLM, AutoTokenizer  # slow import, only when used

            if self.path.is_file():
                where, extra = str(self.path.parent), {"gguf_file": self.path.name}
            else:
                where, extra = str(self.path), {}
            try:
                tokenizer = AutoTokenizer.from_pretrained(where, local_files_only=True, **extra)
                model = AutoModelForCausalLM.from_pretrained(where, local_files_only=True, **extra)
            except (OSError, ValueError) as exc:
                raise MapleError(f"MAPLE_LLM: cannot load the model at {self.path}: {exc}") from exc
            self._loaded = tokenizer, model.eval()
        return self._loaded

    def chat(self, messages: list[dict]) -> str:
        import torch

        tokenizer, model = self._load()
        if tokenizer.chat_template:
            inputs = tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )
        else:  # a base model: the messages as plain text
            inputs = tokenizer("\n\n".join(m["content"] for m in messages), return_tensors="pt")
        with torch.inference_mode():
            output = model.generate(
                **inputs, max_new_tokens=self.max_tokens, do_sample=False, pad_token_id=tokenizer.eos_token_id
            )
        return tokenizer.decode(output[0][inputs["input_ids"].shape[1] :], skip_special_tokens=True)


class OpenAIBackend(Backend):
    """Any OpenAI-compatible chat endpoint: vLLM or Ollama on the cluster, or a hosted model.
    MAPLE_LLM_MODEL names the model the endpoint serves; MAPLE_LLM_API_KEY is sent when set."""

    name = "openai"

    def __init__(self, base_url: str, model: Optional[str], api_key: Optional[str] = None,
                 max_tokens: int = MAX_TOKENS):  # fmt: skip
        if not re.match(r"^https?://", base_url):
            raise MapleError(f"MAPLE_LLM: openai:{base_url} is not an http(s) URL (e.g. openai:http://localhost:8000/v1)")
        if not model:
            raise MapleError("MAPLE_LLM_MODEL must name the model the OpenAI-compatible endpoint serves")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.api_key, self.max_tokens = model, api_key, max_tokens

    def chat(self, messages: list[dict]) -> str:
        body = {"model": self.model, "messages": messages, "temperature": 0, "max_tokens": self.max_tokens}
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            response = requests.post(self.url, json=body, headers=headers, timeout=(CONNECT_TIMEOUT, READ_TIMEOUT))
        except requests.RequestException as exc:
            raise MapleError(f"cannot reach the LLM endpoint {self.url}: {exc}") from exc
        if response.status_code >= 400:
            raise MapleError(f"the LLM endpoint {self.url} answered HTTP {response.status_code}: {response.text[:300]}")
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, LookupError, TypeError):
            content = None
        if not isinstance(content, str):
            raise MapleError(f"the LLM endpoint {self.url} sent no chat completion: {response.text[:300]}")
        return content


def backend_from_setting(value: Optional[str] = None) -> Optional[Backend]:
    """The backend a MAPLE_LLM setting names (the environment variable when `value` is None);
    None for "none" or no setting: the debug agent then uses the knowledge base only."""
    value = (os.environ.get("MAPLE_LLM", "") if value is None else value).strip()
    if value in ("", "none"):
        return None
    kind, _, where = value.partition(":")
    if kind == "transformers" and where:
        return TransformersBackend(where)
    if kind == "openai" and where:
        return OpenAIBackend(where, os.environ.get("MAPLE_LLM_MODEL"), os.environ.get("MAPLE_LLM_API_KEY"))
    raise MapleError(f"MAPLE_LLM={value!r}: expected none, transformers:<path> or openai:<base-url>")


# ---------------------------------------------------------------------------------------------
# Prompt and answer


class _Answer(BaseModel):
    """The JSON the model must answer with."""

    model_config = ConfigDict(extra="forbid")

    explanation: str = ""
    ops: list[EditOp] = Field(min_length=1)


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
# The patched script is run by the verification: a model's values may not substitute, chain or
# redirect commands, nor start a new line (the diff still goes to a person for review).
_COMMAND = re.compile(r"\$\(|`|[;&|<>\n]")
# A directive or command the ops can address: worth showing the model even in a long script.
_EDITABLE = re.compile(r"^\s*(?:#SBATCH|#PBS|module\s|ml\s|export\s|unset\s|\S*(?:srun|mpiexec|mpirun|torchrun|"
                       r"deepspeed|accelerate|python3?)\b)")  # fmt: skip
_WORD = re.compile(r"[\w./-]{4,}")


def _script_excerpt(script: str, failure_window: str) -> str:
    """The script with line numbers; a long one cut to the lines an op can edit and the lines that
    share a rare word (on a few lines only) with the error, each with its neighbours ("..." marks
    what was left out)."""
    lines = script.split("\n")
    keep = range(len(lines))
    if len(lines) > MAX_SCRIPT_LINES:
        words = [set(_WORD.findall(line)) for line in lines]
        counts = Counter(w for line_words in words for w in line_words)
        rare = {w for w in _WORD.findall(failure_window) if counts[w] <= 3}
        relevant = [i for i, line in enumerate(lines) if _EDITABLE.match(line) or words[i] & rare]
        keep = sorted({j for i in relevant for j in (i - 1, i, i + 1) if 0 <= j < len(lines)})[:MAX_SCRIPT_LINES]
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
        unsafe = [v for k, v in op if k != "op" and isinstance(v, str) and _COMMAND.search(v)]
        if unsafe:
            return Proposal([], f"the model's {op.op} would add a command ({unsafe[0]!r}); model edits may not")
    return Proposal(answer.ops, answer.explanation)


def propose_ops(backend: Backend, script: str, failure_window: str, cluster_facts: dict) -> Proposal:
    """Ask the model for edit operations that fix the failure. Never raises for a bad or missing
    answer: an endpoint that cannot be reached or an answer outside the op set gives no ops and says why."""
    try:
        text = backend.chat(_messages(script, failure_window, cluster_facts))
    except MapleError as exc:
        return Proposal([], str(exc))
    return parse_answer(text)
