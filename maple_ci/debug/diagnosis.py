"""One diagnosis of a failed job: the first error, the known cases, ranked candidate fixes and
advice of a kind (what `maple debug` prints and the bot posts)."""

from typing import Literal, Optional

from pydantic import BaseModel, Field

from .kb import EditOp, Match
from .logs import Failure
from .retrieval import Reference

AdviceKind = Literal["fix", "site_value", "infrastructure", "policy", "user_code", "environment", "none"]


class Candidate(BaseModel):
    entry_id: str
    explanation: str
    ops: list[EditOp]  # resolved; a site value maple lacks is a <name> placeholder
    find: dict[str, str] = Field(default_factory=dict)  # placeholder -> the command that finds its value
    script: Optional[str] = None  # the patched script, when the ops apply to it
    workaround: bool = False  # avoids a cause outside the script (the advice names it)
    cause: Optional[str] = None  # the narrower cause its precondition identified (kb.Fix.cause)


class Advice(BaseModel):
    kind: AdviceKind
    text: str


class Diagnosis(BaseModel):
    failure: Optional[Failure]
    matches: list[Match] = Field(default_factory=list)
    candidates: list[Candidate] = Field(default_factory=list)
    advice: Advice
    references: list[Reference] = Field(default_factory=list)  # centers' pages, GitHub threads (--online)
    notes: list[str] = Field(default_factory=list)  # what retrieval could not do
    # With a model (MAPLE_LLM): its reason for the candidates' order, one line of its own words
    # (model.spoken), or why its ranking was not used. Empty without a model.
    model_says: str = ""
