"""The knowledge base of known failures (templates/errors/*.yaml, see KBEntry), the closed set of
edits a fix may make, and the cluster facts a fix may name."""

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .. import schedulers
from ..errors import MapleError
from ..paths import templates_dir
from ..profiles import get_profile, load_profiles

if TYPE_CHECKING:  # logs classifies with this module's entries
    from .logs import Failure

Category = Literal["scheduler", "launcher", "environment", "library", "infrastructure", "program"]

# ---------------------------------------------------------------------------------------------
# Edit operations: the closed set of changes a fix may make to a script


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SetDirective(_Op):
    """Add or replace a scheduler option: "--partition" (Slurm, short forms recognised),
    "-A" (PBS or Slurm), "-l filesystems" (a PBS resource)."""

    op: Literal["set_directive"]
    name: str
    value: str = ""  # empty for a bare flag such as "--exclusive"


class RemoveDirective(_Op):
    op: Literal["remove_directive"]
    name: str


class AddModule(_Op):
    op: Literal["add_module"]
    name: str


class ExportEnv(_Op):
    op: Literal["export_env"]
    name: str = Field(pattern=r"^[A-Za-z_]\w*$")
    value: str


class UnsetEnv(_Op):
    op: Literal["unset_env"]
    name: str = Field(pattern=r"^[A-Za-z_]\w*$")


class ReplaceFlag(_Op):
    """Change a launcher flag's value wherever the script passes it (--nproc_per_node, --ppn)."""

    op: Literal["replace_flag"]
    flag: str = Field(pattern=r"^--?[\w-]+$")
    value: str


class AddFlag(_Op):
    """Pass a flag to a launcher on its last invocation (e.g. srun --export=ALL, mpiexec --no-vni)."""

    op: Literal["add_flag"]
    launcher: str
    flag: str = Field(pattern=r"^--?[\w-]+$")
    value: str = ""


class ReplaceText(_Op):
    """Guarded edit: `old` (whole words, may span lines) becomes `new` if it occurs exactly once;
    the script is left as it is when `old` is absent, and an ambiguous `old` is an error."""

    op: Literal["replace_text"]
    old: str = Field(min_length=1)
    new: str


EditOp = Annotated[
    Union[SetDirective, RemoveDirective, AddModule, ExportEnv, UnsetEnv, ReplaceFlag, AddFlag, ReplaceText],
    Field(discriminator="op"),
]


# ---------------------------------------------------------------------------------------------
# Knowledge base


class Fix(BaseModel):
    """One candidate fix of an entry, with its precondition on the script: every `requires` regex
    matches the script (its named groups become values for the ops) and no `unless` regex does."""

    model_config = ConfigDict(extra="forbid")

    ops: list[EditOp] = Field(min_length=1)
    requires: list[str] = Field(default_factory=list)
    unless: list[str] = Field(default_factory=list)
    # The same on the error's own text (the window from the first error line): the message says
    # which limit, which interface, which resource, and a fix holds only for some of them.
    log_requires: list[str] = Field(default_factory=list)
    log_unless: list[str] = Field(default_factory=list)
    explanation: str = ""  # why this alternative, when it differs from the entry's
    workaround: bool = False  # the cause is elsewhere (the entry's outcome says where); this edit avoids it
    # The narrower cause its precondition identifies (a class of benchmarks/debug/classes.yaml),
    # e.g. a port in use because the script starts two launchers per node.
    cause: Optional[str] = Field(default=None, pattern=r"^[a-z][a-z0-9_]*$")

    @field_validator("requires", "unless", "log_requires", "log_unless")
    @classmethod
    def _compile(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            re.compile(p)
        return patterns


# What a person should do when the fix is not an edit of the script (debug.advice).
Outcome = Literal["infrastructure", "policy", "user_code", "environment"]


class KBEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    patterns: list[str] = Field(min_length=1)  # regexes; named groups become values for the fix
    category: Category
    clusters: list[str] = Field(default_factory=lambda: ["any"])
    explanation: str
    fix: list[EditOp] = Field(default_factory=list)  # the fix that always applies; empty: see fixes
    fixes: list[Fix] = Field(default_factory=list)  # alternatives with preconditions, best first
    # The advice when no fix applies: default infrastructure, user_code and environment for those
    # categories (a module, package or build to change, which is for a person to choose).
    outcome: Optional[Outcome] = None
    # What to do when no fix applies, in the outcome's own words (who to ask, the command that
    # checks), where the generic advice of the outcome would mislead (e.g. "resubmit").
    advice: str = ""
    source: str = Field(pattern=r"^https://")
    examples: list[str] = Field(min_length=1)  # log text the patterns must match
    # Only a match when every failing rank is on a node other than the first (rank >= ranks per
    # node; rank >= 1 when the cluster is unknown): the batch node's environment did not reach them.
    only_remote_ranks: bool = False
    # The fix is shell for this scheduler only (e.g. scontrol); other clusters get the advice.
    scheduler: Optional[str] = None  # a registered scheduler (maple_ci/schedulers)
    # A catalogue entry (issue 27): the component whose own message it is, and where the message
    # was read, "owner/repo path:line @ version (symbol)", so a later release can be checked.
    component: Optional[str] = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]*$")
    read_from: Optional[str] = None

    @model_validator(mode="after")
    def _cited(self) -> "KBEntry":
        if self.component and not self.read_from:
            raise ValueError(f"catalogue entry {self.id} ({self.component}) says nowhere where it was read (read_from)")
        return self

    @field_validator("scheduler")
    @classmethod
    def _registered(cls, name: Optional[str]) -> Optional[str]:
        if name is not None and name not in schedulers.names():
            raise ValueError(f"unknown scheduler {name!r}: registered are {', '.join(schedulers.names())}")
        return name

    @field_validator("patterns")
    @classmethod
    def _compile(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            re.compile(p)
        return patterns

    @property
    def alternatives(self) -> list[Fix]:
        """Every candidate fix in rank order: the guarded alternatives, then the unguarded fix."""
        return self.fixes + ([Fix(ops=self.fix)] if self.fix else [])

    @property
    def advice_kind(self) -> Optional[Outcome]:
        defaults = {"infrastructure": "infrastructure", "program": "user_code", "environment": "environment"}
        return self.outcome or defaults.get(self.category)

    @property
    def regexes(self) -> list[re.Pattern]:
        return [_compiled(p) for p in self.patterns]

    def applies_to(self, cluster: Optional[str]) -> bool:
        # With no cluster known, only entries that hold everywhere count.
        return "any" in self.clusters or cluster in self.clusters


@lru_cache(maxsize=None)
def _compiled(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.MULTILINE)


def _kb_files() -> list[Path]:
    return sorted((templates_dir() / "errors").glob("*.yaml"))


def kb_hash() -> str:
    digest = hashlib.sha256()
    for path in _kb_files():
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# libyaml's loader where PyYAML has it: the catalogues (hundreds of messages) load several times faster.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=4)
def _load_kb(content_hash: str) -> tuple[KBEntry, ...]:
    entries: list[KBEntry] = []
    for path in _kb_files():
        try:
            entries += [KBEntry.model_validate(item) for item in yaml.load(path.read_text(), Loader=_YAML_LOADER) or []]
        except Exception as exc:  # a broken data file must name itself
            raise MapleError(f"invalid error knowledge base {path}: {exc}") from exc
    ids = [e.id for e in entries]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise MapleError(f"duplicate error entry ids: {', '.join(duplicates)}")
    return tuple(entries)


def load_kb() -> tuple[KBEntry, ...]:
    return _load_kb(kb_hash())


class Match(BaseModel):
    entry: KBEntry
    kind: Literal["exact", "similar"]
    score: float  # 1.0 for an exact match, cosine similarity otherwise
    groups: dict[str, str] = Field(default_factory=dict)  # named groups captured from the log


def _eligible(entry: KBEntry, cluster: Optional[str], local_size: Optional[int], ranks: list[int]) -> bool:
    """The entry holds on this cluster, and for a remote-ranks-only entry every failing rank is remote."""
    remote = bool(ranks) and min(ranks) >= (local_size or 1)
    return entry.applies_to(cluster) and (remote or not entry.only_remote_ranks)


def _earliest(entry: KBEntry, text: str) -> Optional[re.Match]:
    found = [m for m in (r.search(text) for r in entry.regexes) if m]
    return min(found, key=lambda m: m.start()) if found else None


def exact_hits(text: str, cluster: Optional[str], local_size: Optional[int], ranks: list[int]) -> list[Match]:
    """Entries whose patterns match `text`, earliest match first; at the same place,
    cluster-specific entries before generic ones, then in knowledge-base order."""
    hits = []
    for order, entry in enumerate(load_kb()):
        m = _earliest(entry, text) if _eligible(entry, cluster, local_size, ranks) else None
        if m:
            groups = {k: v for k, v in m.groupdict().items() if v is not None}
            found_at = (m.start(), "any" in entry.clusters, order)
            hits.append((found_at, Match(entry=entry, kind="exact", score=1.0, groups=groups)))
    return [hit for _, hit in sorted(hits, key=lambda h: h[0])]


def _kb_table():
    from ..vectordb import cached_table  # lancedb is slow to import; only similarity search needs it

    entries = load_kb()
    return cached_table(
        "errors", kb_hash(), lambda: [{"id": e.id, "text": example} for e in entries for example in e.examples]
    )


def exact_matches(failure: "Failure", cluster: Optional[str] = None) -> list[Match]:
    """Entries whose patterns match the failure's text, earliest in the log first."""
    profile = load_profiles().get(cluster) if cluster else None
    local_size = profile.devices_per_node if profile else None
    return exact_hits(failure.error_text, cluster, local_size, failure.ranks)


def match(failure: "Failure", cluster: Optional[str] = None, k: int = 3) -> list[Match]:
    """Known cases for `failure`: exact regex matches (with captured groups) first, then the
    entries whose examples are nearest to the failure's error lines, up to k in all."""
    exact = exact_matches(failure, cluster)
    if len(exact) >= k:
        return exact[:k]
    from ..embedding import embed

    by_id = {e.id: e for e in load_kb()}
    seen = {m.entry.id for m in exact}
    similar = []
    rows = _kb_table().search(embed([failure.signature])[0]).distance_type("cosine").limit(8 * k).to_list()
    for row in rows:  # one row per example, best first
        entry = by_id[row["id"]]
        if entry.id in seen or (cluster and not entry.applies_to(cluster)):  # hints may come from any site
            continue
        seen.add(entry.id)
        similar.append(Match(entry=entry, kind="similar", score=round(1.0 - row["_distance"], 4)))
    return (exact + similar)[:k]


# ---------------------------------------------------------------------------------------------
# Facts a fix may refer to ({partition}, {devices_per_node}, {NCCL_SOCKET_IFNAME}, ...)


def fix_context(cluster: Optional[str]) -> dict[str, str]:
    """Values from the cluster profile that fixes can name: the default queue under its directive's
    name (partition, qos or queue), walltime and device limits, facts from the required directives
    (--constraint=gpu -> constraint, -l filesystems=... -> filesystems), the GPU request, the
    framework module, and the profile's environment variables under their own names."""
    if not cluster:
        return {}
    profile = get_profile(cluster)
    queue = profile.default_queue()
    context = {
        "cluster": profile.name,
        "scheduler": profile.scheduler,
        "queue": queue.name,
        profile.queue_directive: queue.name,
        "max_walltime": queue.max_walltime,
        "devices_per_node": str(profile.devices_per_node),
        "backend": profile.backend,
    }
    for directive in profile.directives:
        m = re.match(r"^(?:--|-l\s+)([\w-]+)=(\S+)$", directive)
        if m:
            context[m[1].replace("-", "_")] = m[2]
    if profile.gpu_request and "{total_gpus}" not in profile.gpu_request:  # a total depends on the job
        request = profile.gpu_request.format(gpus=profile.devices_per_node)  # e.g. --gpus-per-node=4
        context["gpu_flag"], _, context["gpu_count"] = request.partition("=")
    modules = profile.setup_for("pytorch").modules
    if modules:
        context["framework_module"] = modules[-1]
    return context | profile.env

