"""What the bot remembers about one of its PRs, in a small hidden marker at the end of the PR body.

The bot has no database: like Renovate, it keeps its memory in the PR. The marker holds what
earlier requests reported (so one PR describes every script and cluster on the branch), the
clusters and files `/maple ignore` named, and the generated scripts whose fix was committed (so a
refresh that generates the same script again keeps the fix). It is compact JSON, compressed: the
scripts, the extracted intent and the check messages stay out of it. Anyone with write access can
edit the body, so everything read back is checked, and a damaged marker reads as empty.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import zlib
from typing import NamedTuple

from maple_ci.github.delivery import SourceResult

_MARKER = re.compile(r"<!-- maple-ci state ([A-Za-z0-9_=-]+) -->")
_KEPT = ("cluster", "path", "template", "verification", "log_url", "note")
NOTE_LIMIT = 300  # characters of a cluster's note kept for the next request's table
MARKER_LIMIT = 60000  # what the bot reads back at most (a PR body holds 65536 characters)


class State(NamedTuple):
    results: list[SourceResult] = []  # earlier requests' rows: no content, intent or check messages
    ignore: tuple[str, ...] = ()  # clusters and files not to port here
    # path -> [digest of the generated script, the committed fix's edits [[start_line, line, text]...]]
    fixes: dict[str, list] = {}


def digest(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:16]


def read_state(body: str | None) -> State:
    """The state in a PR body; empty when there is none or it is damaged."""
    data = _marker_data(body)
    if not _state_ok(data):
        return State()
    results = [_read_result(r) for r in data.get("results", [])]
    return State(results, tuple(data.get("ignore", [])), dict(data.get("fixes", {})))


def _marker_data(body: str | None):
    """What the body's last marker holds, unchecked; None when there is none or it cannot be read."""
    found = _MARKER.findall(body or "")
    return unpack(found[-1]) if found else None


def pack(data) -> str:
    """`data` as compact JSON, compressed, in characters a hidden HTML comment can hold."""
    return base64.urlsafe_b64encode(zlib.compress(json.dumps(data, separators=(",", ":")).encode(), 9)).decode()


def unpack(packed: str):
    """What `pack` gave, unchecked; None when it is too long or cannot be read (a person may edit it)."""
    if len(packed) > MARKER_LIMIT:
        return None
    try:
        return json.loads(zlib.decompress(base64.urlsafe_b64decode(packed), bufsize=MARKER_LIMIT))
    except (binascii.Error, ValueError, zlib.error):
        return None


def _state_ok(data) -> bool:
    return (isinstance(data, dict) and _strings(data.get("ignore", []))
            and _fixes_ok(data.get("fixes", {})) and _results_ok(data.get("results", [])))


def _read_result(r: dict) -> SourceResult:
    """A remembered row with what the marker leaves out: no intent, content or suggestions."""
    return {**r, "intent": {}, "clusters": [{"log_url": None, **c, "content": "", "suggestions": []} for c in r["clusters"]]}


def write_state(state: State) -> str:
    """The hidden marker for `state`."""
    results = [{"source": r["source"], **({"provenance": r["provenance"]} if r.get("provenance") else {}),
                "clusters": [_compact(c) for c in r["clusters"]]} for r in state.results]
    data = {"results": results, "ignore": list(state.ignore), "fixes": state.fixes}
    return f"<!-- maple-ci state {pack(data)} -->"


def _compact(c) -> dict:
    kept = {k: c[k] for k in _KEPT if c.get(k) is not None}
    if "note" in kept:
        kept["note"] = kept["note"][:NOTE_LIMIT]
    kept["checks"] = [_compact_check(k) for k in c["checks"]]
    return kept


def _compact_check(k: dict) -> dict:
    """A check without its message (the next request's table shows only what passed)."""
    return {"name": k["name"], "ok": k["ok"], "message": ""} | ({"severity": k["severity"]} if "severity" in k else {})


def with_fix(content: str, fix: list | None) -> str:
    """`content` with a committed fix's edits applied when it is the script that fix was made for."""
    if not fix or fix[0] != digest(content):
        return content
    return apply_edits(content, fix[1])


def apply_edits(content: str, edits: list) -> str:
    """Replace lines start..end (1-based) by each text, as GitHub applies a review suggestion."""
    lines = content.splitlines(keepends=True)
    for start, end, text in sorted(edits, reverse=True):
        lines[start - 1:end] = [text if text.endswith("\n") or not text else text + "\n"]
    return "".join(lines)


def _fixes_ok(fixes) -> bool:
    return isinstance(fixes, dict) and all(_fix_ok(f) for f in fixes.values())


def _fix_ok(fix) -> bool:
    """[digest, [[start_line, line, text]...]]."""
    return (isinstance(fix, list) and len(fix) == 2 and isinstance(fix[0], str) and isinstance(fix[1], list)
            and all(_edit_ok(e) for e in fix[1]))


def _edit_ok(e) -> bool:
    return isinstance(e, list) and len(e) == 3 and isinstance(e[0], int) and isinstance(e[1], int) and isinstance(e[2], str)


def _strings(values) -> bool:
    return isinstance(values, list) and all(isinstance(v, str) for v in values)


def _results_ok(results) -> bool:
    return isinstance(results, list) and all(_result_ok(r) for r in results)


def _result_ok(r) -> bool:
    return (isinstance(r, dict) and isinstance(r.get("source"), str) and isinstance(r.get("clusters"), list)
            and all(_cluster_ok(c) for c in r["clusters"]))


def _cluster_ok(c) -> bool:
    return (isinstance(c, dict) and all(isinstance(c.get(k), str) for k in ("cluster", "path", "template", "verification"))
            and isinstance(c.get("checks"), list) and all(_check_ok(k) for k in c["checks"]))


def _check_ok(k) -> bool:
    return isinstance(k, dict) and isinstance(k.get("ok"), bool) and isinstance(k.get("name"), str)
