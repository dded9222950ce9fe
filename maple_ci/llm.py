"""Optional language model backends (MAPLE_LLM), for failures the knowledge base has no fix for.

    backend_from_setting("none" | "transformers:<dir or .gguf>" | "openai:<base-url>") -> Backend | None

What the model is asked and how its answer becomes edit operations lives with the debug agent
(maple_ci.debug.model.propose_ops): this module knows nothing of the debug agent's types.
Local first: a transformers model is read from disk only, never fetched from a hub.
"""

import os
import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Optional

import requests

from .errors import MapleError

MAX_TOKENS = 256  # a few ops in JSON; longer answers are rambling
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
            _optional("transformers")
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
        _optional("torch")
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


def _optional(package: str) -> None:
    """A one-line MapleError, not an ImportError's traceback, when an optional package is missing."""
    import importlib

    try:
        importlib.import_module(package)
    except ImportError as exc:  # not installed, or an install that does not import
        raise MapleError(f"MAPLE_LLM=transformers:... needs the optional package {package}, which does not import "
                         f"({exc}; pip install {package}); or use MAPLE_LLM=openai:<base-url> or none") from None


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
