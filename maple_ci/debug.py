"""The debug agent: find the first real error in a job log, match it to known fixes, patch the script.

    locate(log)                 -> Failure | None   first error line, a window around it, a category
    match(failure, cluster)     -> [Match]          known cases: exact regex hits, then nearest by embedding
    fix_context(cluster)        -> dict             profile facts a fix may name ({partition}, ...)
    apply_fix(script, ops, ctx) -> str              structured edits, pure and idempotent
    diff / suggestions                              unified diff and line-anchored review suggestions
    debug_loop(script, run, cluster)                locate -> match -> apply -> run again
    with llm= (a maple_ci.llm backend), a failure no known fix covers is shown to a model, whose
    edits are kept only when the script still parses and passes the static checks

The knowledge base is data: templates/errors/*.yaml, one list of entries per topic (see KBEntry).
"""

import difflib
import hashlib
import re
import shlex
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Callable, Literal, NamedTuple, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from .errors import MapleError
from .paths import templates_dir
from .profiles import get_profile, load_profiles

if TYPE_CHECKING:  # llm imports EditOp from here
    from .llm import Backend

Category = Literal["scheduler", "launcher", "environment", "library", "infrastructure", "program"]

# ---------------------------------------------------------------------------------------------
# Line classifier

# A line is an error line when one of these matches and none of the benign patterns does.
# Case matters: "Error:"/"ERROR" are error markers, "error" inside prose usually is not.
_ERROR_PATTERNS = [
    r"Traceback \(most recent call last\)",
    r"\b[A-Z]\w*(?:Error|Exception)\b(?::|$)",  # RuntimeError: ..., torch.OutOfMemoryError: ...
    r"\b(?:sbatch|salloc|srun|slurmstepd|mpiexec|mpirun|ibrun|pdsh|gcc|g\+\+|nvcc): (?:error|fatal)\b",
    r"(?:^|[ \t])qsub: ",  # qsub only speaks when it refuses a job
    r"=>> PBS: job killed",
    r"\bNCCL WARN\b",
    r"\[E\d{4} ",  # torch C++ error-level log lines ("[E1121 05:00:00 ... ProcessGroupNCCL.cpp")
    r"\|CCL_ERROR\|",
    r"\bFATAL\b|\bFatal error\b",
    r"\bERROR\b",
    r"\berror:",
    r"Lmod has detected the following error",
    r"(?:^|[ \t])Killed(?:[ \t]|$)",
    r"\bCUDA error\b|\bHIP error\b",
    r"command not found",
    r"No such file or directory",
    r"can't open file",
    r"Permission denied",
    r"\bError(?: \[|:)",  # MIOpen(HIP): Error [...], Error: network ... not found
    r"Segmentation fault|core dumped|\bAborted\b",
    r"oom[-_]kill|Out Of Memory",
    r"NODE_FAIL|DUE TO NODE FAILURE|CANCELLED AT \S+ DUE TO",
    r"Uncorrectable|ECC error|fallen off the bus|\bXid\b",
    r"Cassini Event Queue overflow",
    r"No VNIs available",
    r"failed to acquire job resources",
    r"allocation failure:",  # sbatch --test-only, salloc
    r"ping failed on|ping RPC timeout",  # PALS losing a node (Aurora)
    r"Unexpected page fault from GPU",
    r"(?:server|client) socket (?:has failed to (?:bind|listen)|cannot be initialized|has timed out)",
]
# Lines that look like errors but are documented as harmless.
_BENIGN_PATTERNS = [
    r"errno: 97 - Address family not supported",  # c10d IPv6 fallback (OLCF pytorch_frontier)
    r"srun: error: ioctl\(TIOCGWINSZ\)",  # srun without a terminal
    r"from LD_PRELOAD cannot be preloaded .*: ignored",
    r"PMIX ERROR: PMIX_ERR(?:OR|_NOT_FOUND) in file dstore_base\.c",  # single-node runs (Aurora known issues)
    r"\b(?:User|Future|Deprecation|Runtime)Warning\b",
    # torch C++ warning-level lines ("[W socket.cpp:...]", after an srun label "0: "): c10d retries,
    # except retries to a host name that does not resolve, which can never succeed.
    r"^\s*(?:\[?(?:rank|default)?\d+\]?:\s?)?\[W(?:\d{4})?[ \]](?!.*Name or service not known)",
]
_ERROR_LINE = re.compile("|".join(_ERROR_PATTERNS))
_BENIGN_LINE = re.compile("|".join(_BENIGN_PATTERNS))
# Every error pattern needs one of these words. Python's regex engine tries each alternative at
# every character (~2 MB/s here); str.find runs at memory speed, so only lines holding one of
# these words reach the regexes.
_KEYWORDS = (
    "Traceback", "Error", "Exception", "error", "ERROR", "qsub: ", "PBS: job killed", "NCCL WARN",
    "FATAL", "Fatal", "Lmod has detected", "Killed", "command not found", "No such file",
    "can't open file", "Permission denied", "Segmentation fault", "core dumped", "Aborted", "oom",
    "Out Of Memory", "NODE_FAIL", "NODE FAILURE", "CANCELLED AT", "Uncorrectable", "fallen off the bus",
    "Xid", "Cassini", "No VNIs", "failed to acquire", "allocation failure", "ping failed", "ping RPC",
    "page fault", "socket", "[E",
)  # fmt: skip


def is_error_line(line: str) -> bool:
    # Cheapest test first: keywords, then the short benign list, then the long error pattern.
    return any(k in line for k in _KEYWORDS) and not _BENIGN_LINE.search(line) and bool(_ERROR_LINE.search(line))


# ---------------------------------------------------------------------------------------------
# Locator

CHUNK_LINES = 512
WINDOW_BEFORE, WINDOW_AFTER = 5, 20
_TRACEBACK_SCAN = 400  # how far to look for the exception line that ends a traceback

# srun --label ("3: "), torchrun ("[rank3]: ", "[default3]:") prefixes; not "12:30:01" timestamps.
_RANK_PREFIX = re.compile(r"^\s*\[?(?:rank|default)?(?P<rank>\d+)\]?:\s?(?!\d)")


class Failure(BaseModel):
    line_no: int  # 1-based number of the first error line
    line: str
    exception: Optional[str] = None  # the line ending a Python traceback that starts at line_no
    window_start: int  # 1-based number of window[0]
    window: list[str]
    category: Category
    ranks: list[int] = Field(default_factory=list)  # rank labels on the error lines of the window

    @property
    def error_text(self) -> str:
        """The window from the first error line on: what known-error patterns are matched against."""
        return "\n".join(self.window[self.line_no - self.window_start :])

    @property
    def signature(self) -> str:
        """The error lines of the window without rank labels: the text embedded for similarity."""
        lines = [_RANK_PREFIX.sub("", line).strip() for line in self.window if is_error_line(line)]
        if self.exception:
            lines.append(_RANK_PREFIX.sub("", self.exception).strip())
        return "\n".join(dict.fromkeys(lines))  # keep order, drop repeats from other ranks


def _first_error_in(lines: list[str]) -> Optional[int]:
    """Index of the first error line in a block of lines, or None."""
    text = "\n".join(lines)
    starts = set()  # offsets of the lines that hold a keyword
    for keyword in _KEYWORDS:
        pos = text.find(keyword)
        while pos != -1:
            starts.add(text.rfind("\n", 0, pos) + 1)
            end = text.find("\n", pos)
            pos = -1 if end == -1 else text.find(keyword, end)
    index, previous = 0, 0
    for start in sorted(starts):
        index += text.count("\n", previous, start)
        previous = start
        if is_error_line(lines[index]):
            return index
    return None


def _first_error_line(lines: list[str]) -> Optional[int]:
    """Index of the first error line. The log is cut into chunks and the first chunk whose prefix
    holds an error is bisected for ("the first c chunks hold an error" is monotone in c); chunk
    results are memoised, so each chunk is scanned at most once and none after the first error."""

    @lru_cache(maxsize=None)
    def first_in_chunk(c: int) -> Optional[int]:
        return _first_error_in(lines[c * CHUNK_LINES : (c + 1) * CHUNK_LINES])

    def prefix_has_error(c: int) -> bool:
        return any(first_in_chunk(j) is not None for j in range(c + 1))

    chunks = -(-len(lines) // CHUNK_LINES)
    lo, hi = 0, chunks
    while lo < hi:
        mid = (lo + hi) // 2
        if prefix_has_error(mid):
            hi = mid
        else:
            lo = mid + 1
    return None if lo == chunks else lo * CHUNK_LINES + first_in_chunk(lo)


def _exception_line(lines: list[str], start: int) -> Optional[int]:
    """Index of the exception that ends the traceback starting at `start`: the first line after it
    that, without its rank label, is neither indented nor blank nor a traceback header."""
    for i in range(start + 1, min(len(lines), start + _TRACEBACK_SCAN)):
        text = _RANK_PREFIX.sub("", lines[i])
        headers = ("Traceback", "During handling", "The above")
        if text.strip() and not text[0].isspace() and not text.startswith(headers):
            return i
    return None


def locate(log: str) -> Optional[Failure]:
    """The first error line of `log` with a window around it, or None if no line is an error."""
    # Lines as editors number them: split on newlines only; progress bars redraw with bare \r.
    lines = [line.removesuffix("\r") for line in log.split("\n")]
    first = _first_error_line(lines)
    if first is None:
        return None
    end = first + WINDOW_AFTER + 1
    exception = None
    if "Traceback (most recent call last)" in lines[first]:
        exc = _exception_line(lines, first)
        if exc is not None:
            exception = lines[exc]
            end = max(end, exc + 1)
    start = max(0, first - WINDOW_BEFORE)
    window = lines[start:end]
    labels = (_RANK_PREFIX.match(line) for line in window[first - start :] if is_error_line(line))
    ranks = sorted({int(m["rank"]) for m in labels if m})
    error_text = "\n".join(lines[first:end])
    return Failure(
        line_no=first + 1,
        line=lines[first],
        exception=exception,
        window_start=start + 1,
        window=window,
        category=classify(error_text),
        ranks=ranks,
    )


# Broad signatures for failures no knowledge-base entry knows; checked in order, first hit wins.
_CATEGORY_RULES: list[tuple[Category, re.Pattern]] = [
    (c, re.compile(p, re.MULTILINE))
    for c, p in [
        ("infrastructure", r"NODE_FAIL|NODE FAILURE|Node failure|ECC error|Uncorrectable|fallen off the bus|\bXid\b"),
        ("scheduler", r"\b(?:sbatch|salloc): error|(?:^|\s)qsub: |Batch job submission failed|allocation failure"
                      r"|Unable to allocate resources|=>> PBS: job killed|DUE TO TIME LIMIT"),
        ("environment", r"Lmod has detected|modulefile|command not found|ModuleNotFoundError|ImportError|execve\(\)"),
        ("library", r"\bNCCL\b|\bRCCL\b|\bCCL_|CUDA error|HIP error|cuDNN|libfabric|\bMPICH\b|deepspeed|DeepSpeed"),
        ("launcher", r"rendezvous|Rendezvous|torch\.distributed\.elastic|DistNetworkError|DistStoreError"
                     r"|\bsrun: error|mpiexec|socket"),
    ]
]


def classify(error_text: str) -> Category:
    """Category of the failure whose text starts at its first error line: the category of the
    knowledge-base entry that matches earliest, else the broad rules, else a user-program error."""
    hits = _exact_hits(error_text, cluster=None, local_size=None, ranks=[])
    if hits:
        return hits[0].entry.category
    return next((c for c, pattern in _CATEGORY_RULES if pattern.search(error_text)), "program")


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


class KBEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    patterns: list[str] = Field(min_length=1)  # regexes; named groups become values for the fix
    category: Category
    clusters: list[str] = Field(default_factory=lambda: ["any"])
    explanation: str
    fix: list[EditOp] = Field(default_factory=list)  # empty: advice only
    source: str = Field(pattern=r"^https://")
    examples: list[str] = Field(min_length=1)  # log text the patterns must match
    # Only a match when every failing rank is on a node other than the first (rank >= ranks per
    # node; rank >= 1 when the cluster is unknown): the batch node's environment did not reach them.
    only_remote_ranks: bool = False
    # The fix is shell for this scheduler only (e.g. scontrol); other clusters get the advice.
    scheduler: Optional[Literal["slurm", "pbs"]] = None

    @field_validator("patterns")
    @classmethod
    def _compile(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            re.compile(p)
        return patterns

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


@lru_cache(maxsize=4)
def _load_kb(content_hash: str) -> tuple[KBEntry, ...]:
    entries: list[KBEntry] = []
    for path in _kb_files():
        try:
            entries += [KBEntry.model_validate(item) for item in yaml.safe_load(path.read_text()) or []]
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


def _exact_hits(text: str, cluster: Optional[str], local_size: Optional[int], ranks: list[int]) -> list[Match]:
    """Entries whose patterns match `text`, earliest match first; at the same place,
    cluster-specific entries before generic ones, then in knowledge-base order."""
    hits = []
    for order, entry in enumerate(load_kb()):
        if not entry.applies_to(cluster):
            continue
        if entry.only_remote_ranks and not (ranks and min(ranks) >= (local_size or 1)):
            continue
        found = [m for m in (r.search(text) for r in entry.regexes) if m]
        if found:
            m = min(found, key=lambda m: m.start())
            groups = {k: v for k, v in m.groupdict().items() if v is not None}
            found_at = (m.start(), "any" in entry.clusters, order)
            hits.append((found_at, Match(entry=entry, kind="exact", score=1.0, groups=groups)))
    return [hit for _, hit in sorted(hits, key=lambda h: h[0])]


def _kb_table():
    from .vectordb import cached_table  # lancedb is slow to import; only similarity search needs it

    entries = load_kb()
    return cached_table(
        "errors", kb_hash(), lambda: [{"id": e.id, "text": example} for e in entries for example in e.examples]
    )


def exact_matches(failure: Failure, cluster: Optional[str] = None) -> list[Match]:
    """Entries whose patterns match the failure's text, earliest in the log first."""
    profile = load_profiles().get(cluster) if cluster else None
    local_size = profile.devices_per_node if profile else None
    return _exact_hits(failure.error_text, cluster, local_size, failure.ranks)


def match(failure: Failure, cluster: Optional[str] = None, k: int = 3) -> list[Match]:
    """Known cases for `failure`: exact regex matches (with captured groups) first, then the
    entries whose examples are nearest to the failure's error lines, up to k in all."""
    exact = exact_matches(failure, cluster)
    if len(exact) >= k:
        return exact[:k]
    from .embedding import embed

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


_SAFE_VALUE = re.compile(r"^[\w.:/@%+,=-]+$")


# {name} names a fact; ${NAME} is shell and stays as written.
_FIELD = re.compile(r"(?<!\$)\{([A-Za-z_]\w*)\}")


def _fill(template: str, context: dict) -> str:
    """Fill {name} fields from context; a value that is not a plain token is shell-quoted."""
    missing = sorted({n for n in _FIELD.findall(template) if n not in context})
    if missing:
        raise MapleError(f"the fix needs {', '.join(missing)}, which neither the log nor the cluster profile gives")

    def value(m: re.Match) -> str:
        text = str(context[m[1]])
        return text if _SAFE_VALUE.match(text) else shlex.quote(text)

    return _FIELD.sub(value, template)


def _resolve(op, context: dict):
    fields = {k: _fill(v, context) if isinstance(v, str) and k != "op" else v for k, v in op}
    return type(op)(**fields)


# ---------------------------------------------------------------------------------------------
# Applying edits. Scripts are handled as lists of lines; every edit is a no-op when already done.

_SLURM_ALIASES = {
    "-p": "--partition", "-q": "--qos", "-A": "--account", "-t": "--time", "-N": "--nodes",
    "-n": "--ntasks", "-C": "--constraint", "-G": "--gpus", "-c": "--cpus-per-task", "-J": "--job-name",
    "-o": "--output", "-e": "--error", "-w": "--nodelist", "-x": "--exclude",
}  # fmt: skip
# A launch line: optional `time`/`exec`, optional VAR=value assignments, then the launcher.
_LAUNCH = re.compile(
    r"^\s*(?:(?:time|exec|nohup)\s+)?(?:\w+=\S*\s+)*"
    r"(?P<cmd>srun|mpiexec|mpirun|ibrun|aprun|jsrun|torchrun|deepspeed|accelerate|python3?)(?=\s|$)"
)
_MODULE_LINE = re.compile(r"^\s*(?:module|ml)\s")


def _directive_prefix(lines: list[str], context: dict, name: str) -> str:
    """#SBATCH or #PBS, whichever the script uses (else the cluster's), checked against the option:
    long options exist only in Slurm, "-l resource" only in PBS."""
    prefix = next(
        (p for p in ("#SBATCH", "#PBS") if any(line.startswith(p) for line in lines)),
        "#PBS" if context.get("scheduler") == "pbs" else "#SBATCH",
    )
    if (prefix == "#PBS" and name.startswith("--")) or (prefix == "#SBATCH" and name.startswith("-l ")):
        raise MapleError(f"{name} is not a {prefix} option; this fix is for the other scheduler")
    return prefix


def _option_regex(prefix: str, name: str) -> re.Pattern:
    """One option inside a directive line: group "opt" is the option with its value, "value" the value."""
    if prefix == "#PBS" and name.startswith("-l "):
        resource = re.escape(name[3:].strip())
        return re.compile(rf"-l\s+(?:\S*?,)?(?P<opt>{resource}=(?P<value>[^\s,]+))")
    spellings = {name}
    if prefix == "#SBATCH":
        canonical = _SLURM_ALIASES.get(name, name)
        spellings |= {canonical} | {short for short, long in _SLURM_ALIASES.items() if long == canonical}
    names = "|".join(re.escape(s) for s in sorted(spellings, key=len, reverse=True))
    return re.compile(rf"(?P<lead>\s*)(?<!\S)(?P<opt>(?:{names})(?:(?:=|\s+)(?P<value>[^-\s]\S*))?)(?=\s|$)")


def _format_option(prefix: str, name: str, value: str) -> str:
    if prefix == "#PBS" and name.startswith("-l "):
        return f"-l {name[3:].strip()}={value}"
    if not value:
        return name
    return f"{name}={value}" if name.startswith("--") else f"{name} {value}"


def _set_directive(lines: list[str], op: SetDirective, context: dict) -> list[str]:
    prefix = _directive_prefix(lines, context, op.name)
    pattern = _option_regex(prefix, op.name)
    out, found = list(lines), False

    def replace(m: re.Match) -> str:
        if m["value"] is None:  # a bare flag becomes name=value (or stays bare)
            return m.group(0)[: m.start("opt") - m.start()] + _format_option(prefix, op.name, op.value)
        return m.group(0)[: m.start("value") - m.start()] + op.value

    for i, line in enumerate(lines):
        if line.startswith(prefix) and pattern.search(line, len(prefix)):
            found = True
            head, tail = line[: len(prefix)], line[len(prefix) :]
            out[i] = head + pattern.sub(replace, tail)
    if found:
        return out
    directive_lines = [i for i, line in enumerate(lines) if line.startswith(prefix)]
    at = directive_lines[-1] + 1 if directive_lines else (1 if lines and lines[0].startswith("#!") else 0)
    return lines[:at] + [f"{prefix} {_format_option(prefix, op.name, op.value)}"] + lines[at:]


def _remove_directive(lines: list[str], op: RemoveDirective, context: dict) -> list[str]:
    prefix = _directive_prefix(lines, context, op.name)
    if prefix == "#PBS" and op.name.startswith("-l "):
        raise MapleError(f"removing the PBS resource {op.name!r} is not supported; edit it by hand")
    pattern = _option_regex(prefix, op.name)
    out = []
    for line in lines:
        if line.startswith(prefix) and pattern.search(line, len(prefix)):
            line = line[: len(prefix)] + pattern.sub("", line[len(prefix) :])
            if not line[len(prefix) :].strip():
                continue  # nothing left on the directive line
        out.append(line)
    return out


def _launch_lines(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if _LAUNCH.match(line)]


def _before_launch(lines: list[str], new: list[str]) -> list[str]:
    """Insert `new` right before the first launch line (at the end when there is none)."""
    launches = _launch_lines(lines)
    if launches:
        at = launches[0]
    else:  # after the last line with content, so a trailing newline stays the last thing
        at = max((i + 1 for i, line in enumerate(lines) if line.strip()), default=0)
    return lines[:at] + new + lines[at:]


def _add_module(lines: list[str], op: AddModule, context: dict) -> list[str]:
    for line in lines:
        if _MODULE_LINE.match(line):
            loaded = line.split()[1:]
            if op.name in loaded or ("/" not in op.name and any(t.startswith(op.name + "/") for t in loaded)):
                return lines
    module_lines = [i for i, line in enumerate(lines) if _MODULE_LINE.match(line)]
    if module_lines:
        at = module_lines[-1] + 1
        return lines[:at] + [f"module load {op.name}"] + lines[at:]
    return _before_launch(lines, [f"module load {op.name}"])


def _export_env(lines: list[str], op: ExportEnv, context: dict) -> list[str]:
    assign = re.compile(rf"^(?P<indent>\s*)export\s+{op.name}=")
    found = [i for i, line in enumerate(lines) if assign.match(line)]
    if not found:
        return _before_launch(lines, [f"export {op.name}={op.value}"])
    out = list(lines)
    for i in found:
        out[i] = f"{assign.match(lines[i])['indent']}export {op.name}={op.value}"
    return out


def _unset_env(lines: list[str], op: UnsetEnv, context: dict) -> list[str]:
    # The variable may come from a module, so the script's own exports go and an unset is added.
    assign = re.compile(rf"^\s*export\s+{op.name}=")
    out = [line for line in lines if not assign.match(line)]
    if any(re.match(rf"^\s*unset\s+(?:\w+\s+)*{op.name}\b", line) for line in out):
        return out
    return _before_launch(out, [f"unset {op.name}"])


def _flag_regex(flag: str) -> re.Pattern:
    # torchrun takes --nproc_per_node and --nproc-per-node; MPICH takes -ppn and --ppn.
    bare = flag.lstrip("-")
    spellings = {f"--{bare}", f"--{bare.replace('_', '-')}", f"--{bare.replace('-', '_')}", f"-{bare}", flag}
    names = "|".join(re.escape(s) for s in sorted(spellings, key=len, reverse=True))
    return re.compile(rf"""(?<!\S)(?:{names})(?P<sep>=|\s+)(?P<value>[^\s\\;|&"']+)""")


def _replace_flag(lines: list[str], op: ReplaceFlag, context: dict) -> list[str]:
    pattern = _flag_regex(op.flag)
    out, found = list(lines), False
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#"):
            continue
        if pattern.search(line):
            found = True
            out[i] = pattern.sub(lambda m: m.group(0)[: m.start("value") - m.start()] + op.value, line)
    if not found:
        raise MapleError(f"the script passes no {op.flag} to change")
    return out


def _add_flag(lines: list[str], op: AddFlag, context: dict) -> list[str]:
    launches = [i for i in _launch_lines(lines) if _LAUNCH.match(lines[i])["cmd"] == op.launcher]
    if not launches:
        raise MapleError(f"the script has no {op.launcher} line to add {op.flag} to")
    i = launches[-1]
    line = lines[i]
    existing = re.compile(rf"(?<!\S){re.escape(op.flag)}(?:(?P<sep>=|\s+)(?P<value>[^-\s]\S*))?(?=\s|$)")
    end = _LAUNCH.match(line).end("cmd")
    m = existing.search(line, end)
    flag = _format_option("", op.flag, op.value)
    if m:
        if not op.value or m["value"] == op.value:
            return lines
        new_line = line[: m.start()] + flag + line[m.end() :]  # e.g. --export=NONE -> --export=ALL
    else:
        new_line = f"{line[:end]} {flag}{line[end:]}"
    return lines[:i] + [new_line] + lines[i + 1 :]


def _replace_text(lines: list[str], op: ReplaceText, context: dict) -> list[str]:
    text = "\n".join(lines)

    def places(words: str) -> list[int]:  # whole words only: "hsn0" is not inside "hsn0,hsn1"
        return [m.start() for m in re.finditer(rf"(?<!\S){re.escape(words)}(?!\S)", text)]

    # Done already (new may contain old, e.g. a line added after it, so this check comes first),
    # or nothing to replace: the guard leaves the script as it is.
    found = places(op.old)
    if places(op.new) or not found:
        return lines
    if len(found) > 1:
        raise MapleError(f"{op.old!r} occurs {len(found)} times in the script; the fix edits exactly one")
    at = found[0]
    return (text[:at] + op.new + text[at + len(op.old) :]).split("\n")


_APPLY = {
    "set_directive": _set_directive, "remove_directive": _remove_directive, "add_module": _add_module,
    "export_env": _export_env, "unset_env": _unset_env, "replace_flag": _replace_flag,
    "add_flag": _add_flag, "replace_text": _replace_text,
}  # fmt: skip


def apply_fix(script: str, ops: list, context: Optional[dict] = None) -> str:
    """The script with `ops` applied in order. Pure, deterministic and idempotent; lines no op
    addresses are left byte for byte. Raises MapleError when an op cannot apply: a value the fix
    needs is unknown, the script has no such launcher or flag, or a line to replace is ambiguous."""
    context = context or {}
    lines = script.split("\n")  # split, not splitlines: "\n".join restores the text exactly
    for op in ops:
        resolved = _resolve(op, context)
        lines = _APPLY[resolved.op](lines, resolved, context)
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Diffs and review suggestions


def diff(old: str, new: str, path: str) -> str:
    out = []
    for line in difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


class Suggestion(BaseModel):
    """Replace lines start_line..line (1-based, inclusive, of the OLD file) with body. body is the
    replacement lines, each ending in a newline as in the new file; "" deletes the lines."""

    path: str
    start_line: int
    line: int
    body: str


def suggestions(old: str, new: str, path: str) -> list[Suggestion]:
    """Review suggestions that turn `old` into `new`, anchored on old lines. A pure insertion is
    anchored on the old line before it (or after it, at the top) and repeats that line."""
    a, b = old.splitlines(True), new.splitlines(True)
    hunks: list[list[int]] = []  # [a_start, a_end, b_start, b_end), half-open
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2:  # an insertion has no old line of its own: take a neighbour along
            if not a:
                raise MapleError(f"{path} is empty; there is no line to anchor a suggestion on")
            if i1 > 0:
                i1, j1 = i1 - 1, j1 - 1
            else:
                i2, j2 = i2 + 1, j2 + 1
        if hunks and i1 < hunks[-1][1]:  # overlaps the previous hunk through a shared anchor
            hunks[-1][1], hunks[-1][3] = max(hunks[-1][1], i2), max(hunks[-1][3], j2)
        else:
            hunks.append([i1, i2, j1, j2])
    return [Suggestion(path=path, start_line=i1 + 1, line=i2, body="".join(b[j1:j2])) for i1, i2, j1, j2 in hunks]


def apply_suggestions(old: str, items: list[Suggestion]) -> str:
    """What the old file becomes when every suggestion is committed (as GitHub does)."""
    lines = old.splitlines(True)
    for s in sorted(items, key=lambda s: s.start_line, reverse=True):
        lines[s.start_line - 1 : s.line] = s.body.splitlines(True)
    return "".join(lines)


# ---------------------------------------------------------------------------------------------
# The loop


class RunOutcome(NamedTuple):
    """What a verification backend reports for one run of the script."""

    ok: bool
    log: str


class Attempt(BaseModel):
    line_no: int
    line: str
    exception: Optional[str]
    category: Category
    entry_id: str
    explanation: str
    ops: list[EditOp]  # with the values it used filled in
    diff: str


StopReason = Literal["passed", "infrastructure", "no_error_found", "no_fix", "max_iter"]


class DebugReport(BaseModel):
    ok: bool
    stop_reason: StopReason
    message: str  # what a person should do next
    script: str  # the script as last run
    attempts: list[Attempt] = Field(default_factory=list)  # one per fix applied
    failure: Optional[Failure] = None  # the last failure, when the run did not pass
    matches: list[Match] = Field(default_factory=list)  # known cases for the last failure


def _infrastructure_advice(exact: list[Match]) -> str:
    node = next((m.groups["node"] for m in exact if "node" in m.groups), None)
    explanation = exact[0].entry.explanation if exact else ""
    where = f" on {node}" if node else ""
    exclude = f" If it fails again there, keep the job off that node: #SBATCH --exclude={node}." if node else ""
    advice = f"Hardware or system failure{where}: not a problem with the script. Resubmit it.{exclude}"
    return f"{advice} {explanation}".strip()


class Step(NamedTuple):
    """One diagnosis of a failed run: the fix to try next, or why there is none."""

    failure: Optional[Failure]
    attempt: Optional[Attempt]  # None when no fix applies
    script: str  # patched when attempt is set, else unchanged
    stop: Optional[StopReason]  # set when the loop must stop here
    message: str


def _attempt(failure: Failure, entry_id: str, explanation: str, ops: list, script: str, patched: str, path: str) -> Attempt:
    return Attempt(
        line_no=failure.line_no, line=failure.line, exception=failure.exception, category=failure.category,
        entry_id=entry_id, explanation=explanation, ops=ops, diff=diff(script, patched, path),
    )  # fmt: skip


def next_fix(
    script: str, log: str, cluster: Optional[str], context: dict, path: str = "script", llm: Optional["Backend"] = None
) -> Step:
    """Locate the first error in a failed run's log and apply the first exact known fix that applies
    and changes the script. Only exact matches are applied: a similar case is a hint for a person,
    not evidence. When none applies and `llm` is given, the model's proposal is tried (_model_fix)."""
    failure = locate(log)
    if failure is None:
        return Step(None, None, script, "no_error_found", "the run failed but no line of its log is a recognisable error")
    exact = exact_matches(failure, cluster)
    if failure.category == "infrastructure":
        return Step(failure, None, script, "infrastructure", _infrastructure_advice(exact))
    reasons = []
    for m in (m for m in exact if m.entry.fix):
        if m.entry.scheduler and m.entry.scheduler != context.get("scheduler"):
            reasons.append(f"{m.entry.id}: its fix is for {m.entry.scheduler} clusters")
            continue
        values = context | m.groups
        try:
            patched = apply_fix(script, m.entry.fix, values)
        except MapleError as exc:
            reasons.append(f"{m.entry.id}: {exc}")
            continue
        if patched == script:
            reasons.append(f"{m.entry.id}: its fix changes nothing (already applied or not relevant)")
            continue
        ops = [_resolve(op, values) for op in m.entry.fix]
        attempt = _attempt(failure, m.entry.id, m.entry.explanation, ops, script, patched, path)
        return Step(failure, attempt, patched, None, m.entry.explanation)
    why = "; ".join(reasons) or "no known case with a fix matches this error"
    no_fix = f"line {failure.line_no}: {failure.line.strip()} — {why}"
    if llm is not None:
        return _model_fix(script, failure, cluster, context, path, llm, no_fix)
    return Step(failure, None, script, "no_fix", no_fix)


def _new_errors(script: str, patched: str, cluster: Optional[str]) -> list[str]:
    """What the patched script gets wrong that the script did not: bash -n always; with a cluster,
    the static checks (counted by name, so an error that was already there is not held against the
    patch), read with the intent of the unpatched script so that a changed entrypoint shows."""
    from .extract import extract_script
    from .verify.static import bash_syntax, static_checks

    syntax = bash_syntax(patched)
    if not syntax.ok:
        return [f"bash -n: {syntax.message}"]
    if cluster is None:
        return []
    intent, profile = extract_script(script), get_profile(cluster)
    extract_script(patched)  # still reads as a launch script (MapleError otherwise)

    def errors(text: str) -> list:
        return [c for c in static_checks(text, intent, profile) if not c.ok and c.severity == "error"]

    before = Counter(c.name for c in errors(script))
    new = []
    for check in errors(patched):
        if before[check.name]:
            before[check.name] -= 1
        else:
            new.append(check.message)
    return new


def _model_fix(script: str, failure: Failure, cluster: Optional[str], context: dict, path: str, llm: "Backend",
               no_fix: str) -> Step:  # fmt: skip
    """The language model's edit for a failure no known fix covers, kept only when it changes the
    script, still parses and adds no static-check error; otherwise no_fix with the reason."""
    from .llm import propose_ops

    source = f"llm:{llm.name}"
    proposal = propose_ops(llm, script, "\n".join(failure.window), context)

    def rejected(why: str) -> Step:
        return Step(failure, None, script, "no_fix", f"{no_fix}; {source} proposed no usable fix: {why}")

    if not proposal.ops:
        return rejected(proposal.explanation)
    try:
        patched = apply_fix(script, proposal.ops, context)
        if patched == script:
            return rejected("its edit changes nothing")
        errors = _new_errors(script, patched, cluster)
    except MapleError as exc:
        return rejected(str(exc))
    if errors:
        return rejected("the patched script fails checks the script passed: " + "; ".join(errors))
    explanation = (
        f"Proposed by a language model ({source}), not a known fix: it passed bash -n and the static checks, "
        f"but review it. The model says: {proposal.explanation or '(no explanation)'}"
    )
    ops = [_resolve(op, context) for op in proposal.ops]
    return Step(failure, _attempt(failure, source, explanation, ops, script, patched, path), patched, None, explanation)


def debug_loop(
    script: str,
    run: Callable[[str], RunOutcome],
    cluster: Optional[str] = None,
    max_iter: int = 5,
    context: Optional[dict] = None,
    path: str = "script",
    llm: Optional["Backend"] = None,
) -> DebugReport:
    """Run the script; while it fails, apply the next known fix (next_fix) and run again. Stops when
    the run passes, on a hardware failure, when no known fix applies, or after max_iter fixes.
    `context` adds facts a fix may need that no profile holds (an account, a partition); `llm`
    proposes a fix when no known one applies (maple_ci.llm.backend_from_setting)."""
    context = fix_context(cluster) | (context or {})
    current, attempts = script, []

    def report(stop: StopReason, message: str, failure=None) -> DebugReport:
        matches = match(failure, cluster) if failure is not None else []
        return DebugReport(
            ok=stop == "passed", stop_reason=stop, message=message, script=current,
            attempts=attempts, failure=failure, matches=matches,
        )  # fmt: skip

    while True:
        ok, log = run(current)
        if ok:
            return report("passed", f"the run passed after {len(attempts)} fix(es)")
        if len(attempts) == max_iter:
            return report("max_iter", f"still failing after {max_iter} fixes", locate(log))
        step = next_fix(current, log, cluster, context, path, llm)
        if step.stop:
            return report(step.stop, step.message, step.failure)
        attempts.append(step.attempt)
        current = step.script
