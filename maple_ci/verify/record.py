"""A port's record: what `maple verify` needs to run the read-back gate (readback.py) on a port as
it stands, edits included, before any job.

`maple port` writes it into the port's own header, as a few comment lines before the first blank
line (so every scheduler still reads its directives and the shell runs nothing of it):

  # maple-record: version 1
  # maple-record: cluster polaris
  # maple-record: template polaris-pytorch-ddp
  # maple-record: source sha256:<hex of the source script's UTF-8 text>
  # maple-record: rendezvous MASTER_ADDR MASTER_PORT
  # maple-record: intent {"scheduler":"slurm","launcher":"srun",...}

`rendezvous` is what the gate's environment check needs from the source (the variables it gives its
program; `-` for none); without a source it is left out and so is that check. `intent` is the
source's intent with the user's options, as compact ASCII JSON of its non-default fields (notes are
in the header already). The source itself is not copied: its hash says which version was ported.

Ports made before this (up to 2026-11-29) kept the record in a file beside them, NAME.maple.json,
with the source's whole text; `maple verify` still reads it where the script has no block.

A record is read from the user's repository, which anyone with a pull request can edit: it is
parsed strictly (allowlisted keys of allowlisted types, each once, a bounded size, never evaluated)
and anything else is refused with a MapleError that names the problem.
"""

import hashlib
import json
import re
from dataclasses import MISSING, asdict, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Literal, Optional, Union, get_args, get_origin, get_type_hints

from ..errors import MapleError
from ..extract import RENDEZVOUS_VARS
from ..files import MAX_SOURCE_BYTES, read_text
from ..intent import RECORD_PREFIX, Container, JobIntent
from .readback import readback_checks, rendezvous_given

PREFIX = RECORD_PREFIX
VERSION = "1"
LEGACY_SUFFIX = ".maple.json"  # the record's old home, beside the port
MAX_BLOCK_BYTES = 16 * 1024  # a record is a few hundred bytes; the intent of a long launch line a few KiB
MAX_LINES = 8
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")  # cluster and template ids as the library spells them
_HASH = re.compile(r"sha256:[0-9a-f]{64}")
_KEYS = ("version", "cluster", "template", "source", "rendezvous", "intent")
_REQUIRED = ("version", "cluster", "template", "intent")
_LEGACY_KEYS = {"intent", "cluster", "template", "source_text"}


@dataclass
class Record:
    intent: JobIntent
    cluster: str
    template: str
    source_hash: Optional[str]  # "sha256:<hex>", None when the port had no source script
    rendezvous: Optional[frozenset[str]]  # the source's rendezvous variables; None: not known
    legacy: Optional[Path] = None  # the NAME.maple.json file it was read from, if it was


def make_record(intent: JobIntent, cluster: str, template: str, source_text: Optional[str]) -> Record:
    digest = None if source_text is None else "sha256:" + hashlib.sha256(source_text.encode("utf-8", "surrogatepass")).hexdigest()
    given = None if source_text is None else frozenset(rendezvous_given(source_text, intent))
    return Record(intent, cluster, template, digest, given)


# What the gates read of the intent (readback.py, static.py, process_model.py): only these are written,
# so no value the port chose not to carry (a site's variables, modules, constraint, account, image)
# comes back into the script as text, even in a comment.
RECORDED = ("scheduler", "launcher", "framework", "strategy", "nodes", "gpus_per_node", "world_size", "entrypoint",
            "script_args", "walltime", "queue", "launcher_options", "config_options")


def _non_default(item) -> dict:
    """The recorded fields that differ from their defaults (notes aside: the header has them)."""
    values = {f.name: getattr(item, f.name) for f in fields(item) if f.name in RECORDED}
    defaults = {f.name: f.default if f.default is not MISSING else f.default_factory() for f in fields(item)
                if f.default is not MISSING or f.default_factory is not MISSING}
    return {name: asdict(value) if is_dataclass(value) else value
            for name, value in values.items() if name not in defaults or value != defaults[name]}


def block(record: Record) -> str:
    """The record as header lines, each ending in a newline; json.dumps escapes every control and
    non-ASCII character, so no value can end its comment line and start a command."""
    lines = [f"version {VERSION}", f"cluster {record.cluster}", f"template {record.template}"]
    if record.source_hash:
        lines.append(f"source {record.source_hash}")
    if record.rendezvous is not None:
        lines.append("rendezvous " + (" ".join(sorted(record.rendezvous)) or "-"))
    lines.append("intent " + json.dumps(_non_default(record.intent), separators=(",", ":"), ensure_ascii=True))
    return "".join(f"{PREFIX}{line}\n" for line in lines)


def with_record(script: str, record: Record) -> str:
    """`script` with the record's block at the end of its header (before its first blank line)."""
    head, blank, rest = script.partition("\n\n")
    if not blank:
        return script + ("" if script.endswith("\n") else "\n") + block(record)
    return f"{head}\n{block(record)}\n{rest}"


# Reading: strict, from untrusted text.

def _fits(value, hint) -> bool:
    """Whether a JSON value has the field's declared type exactly (no coercion: "2" is not 2)."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Union:
        return any(_fits(value, arg) for arg in args)
    if origin is Literal:
        return type(value) is str  # JobIntent names the allowed values when it refuses one
    if origin is list:
        return type(value) is list and all(_fits(item, args[0]) for item in value)
    if origin is dict:
        return type(value) is dict and all(_fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items())
    if hint is type(None):
        return value is None
    if hint is Container:
        return type(value) is dict
    return type(value) is hint


def _built(cls, data, what: str):
    """An instance of the dataclass `cls` from a JSON object, its keys and types checked first."""
    if type(data) is not dict:
        raise MapleError(f"{what} is not a JSON object")
    hints = get_type_hints(cls)
    unknown = sorted(set(data) - set(hints))
    if unknown:
        raise MapleError(f"{what} has unknown field(s) {', '.join(map(repr, unknown[:5]))}; allowed: {', '.join(hints)}")
    for name, value in data.items():
        if not _fits(value, hints[name]):
            raise MapleError(f"{what}: {name} has the wrong type ({type(value).__name__})")
    if cls is JobIntent and data.get("container") is not None:
        data = {**data, "container": _built(Container, data["container"], f"{what}: container")}
    return cls(**data)  # JobIntent checks its values (choices, counts, walltime) on construction


def _json(text: str, what: str):
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than any record has
        raise MapleError(f"{what} is not valid JSON ({str(exc)[:80]})") from None


def _entries(lines: list[str], what: str) -> dict[str, str]:
    size = sum(len(line.encode("utf-8", "surrogatepass")) for line in lines)
    if len(lines) > MAX_LINES or size > MAX_BLOCK_BYTES:
        raise MapleError(f"{what} is too large ({len(lines)} lines, {size} bytes; at most {MAX_LINES} lines and "
                         f"{MAX_BLOCK_BYTES} bytes): not a record maple port wrote")
    entries: dict[str, str] = {}
    for line in lines:
        key, _, value = line[len(PREFIX):].strip().partition(" ")
        if key not in _KEYS:
            raise MapleError(f"{what} has an unknown key {key[:40]!r}; allowed: {', '.join(_KEYS)}")
        if key in entries:
            raise MapleError(f"{what} gives {key} twice")
        entries[key] = value.strip()
    if missing := [key for key in _REQUIRED if key not in entries]:
        raise MapleError(f"{what} lacks {', '.join(missing)}")
    return entries


def _name(value: str, key: str, what: str) -> str:
    if not _NAME.fullmatch(value):
        raise MapleError(f"{what}: {key} {value[:40]!r} is not a {key} name")
    return value


def _rendezvous(value: Optional[str], what: str) -> Optional[frozenset[str]]:
    if value is None:
        return None
    names = frozenset(value.split()) - {"-"}
    if unknown := sorted(names - RENDEZVOUS_VARS):
        raise MapleError(f"{what}: rendezvous names {', '.join(n[:40] for n in unknown[:5])}, not rendezvous variables")
    return names


def parse_block(script: str, what: str = "the maple-record block") -> Optional[Record]:
    """The record in `script`'s header, None when it has none; MapleError for anything but a
    block maple port writes."""
    lines = [line for line in script.splitlines() if line.startswith(PREFIX.rstrip())]
    if not lines:
        return None
    entries = _entries(lines, what)
    if entries["version"] != VERSION:
        raise MapleError(f"{what} is version {entries['version'][:20]!r}; this maple reads version {VERSION}")
    source = entries.get("source")
    if source is not None and not _HASH.fullmatch(source):
        raise MapleError(f"{what}: source must read sha256:<64 hex digits>")
    intent = _built(JobIntent, _json(entries["intent"], f"{what}'s intent"), f"{what}'s intent")
    return Record(intent, _name(entries["cluster"], "cluster", what), _name(entries["template"], "template", what),
                  source, _rendezvous(entries.get("rendezvous"), what))


def _legacy(path: Path) -> Optional[Record]:
    """The record from an old port's NAME.maple.json beside it, read as strictly as a block."""
    recorded = Path(str(path) + LEGACY_SUFFIX)
    if not recorded.is_file() and not recorded.is_symlink():
        return None
    what = str(recorded)
    # the old file held the source's whole text (up to MAX_SOURCE_BYTES) as JSON, escapes and all
    data = _json(read_text(recorded, what, limit=4 * MAX_SOURCE_BYTES, follow=False), what)
    if type(data) is not dict or set(data) - _LEGACY_KEYS or not {"intent", "cluster", "template"} <= set(data):
        raise MapleError(f"{what} is not a maple record (keys allowed: {', '.join(sorted(_LEGACY_KEYS))})")
    text = data.get("source_text")
    if (text is not None and type(text) is not str) or type(data["cluster"]) is not str or type(data["template"]) is not str:
        raise MapleError(f"{what}: cluster, template and source_text must be strings")
    intent = _built(JobIntent, data["intent"], f"{what}'s intent")
    record = make_record(intent, _name(data["cluster"], "cluster", what), _name(data["template"], "template", what), text)
    record.legacy = recorded
    return record


def load_record(path: Path, script: str) -> Optional[Record]:
    """The record of the port at `path` (its text `script`): the header's block, else an old
    NAME.maple.json beside it, else None (a script maple did not write)."""
    return parse_block(script, f"{path}: the maple-record block") or _legacy(path)


def gate_failures(script: str, record: Record) -> list[str]:
    """The read-back gate's failing checks for a port as it stands (its text `script`), against its record."""
    from ..library import get_template
    from ..profiles import get_profile

    checks = readback_checks(script, record.intent, get_profile(record.cluster), get_template(record.template),
                             rendezvous=record.rendezvous)
    return [f"{c.name}: {c.message}" for c in checks if not c.ok and c.severity == "error"]
