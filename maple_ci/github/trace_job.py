"""The trace gate in the Action (issue 25 F): the port's trace runs script content, so it runs in a
job of its own, and its verdict comes back as untrusted data.

1. The privileged `maple` job ports and publishes, then says what may be traced (`request`): the
   source commit, the scripts and the clusters, and the commit the `trace` check run goes on. Fork
   content is traced only once a maintainer approved that exact commit (`/maple approve <sha>`);
   a branch of this repository only when no fork wrote an unapproved file its scripts run
   (runs.held, as for verification). Otherwise there is no request, and the reply says why.
2. The `trace` job (`permissions: {}`, no secrets, no environment) checks that commit out, ports
   each script and traces source and port in maple's sandbox (trace/compare.gate), and prints the
   verdicts as JSON (`run_request`).
3. The `trace-report` job reads that JSON as the script's own words (the script can forge it): it
   passes an allowlist (`read_result`: this schema, this commit, the requested scripts and clusters,
   bounded plain text) and becomes the `maple / trace` check run. Nothing of it is ported or run.
"""

from __future__ import annotations

import base64
import json
import re
import tempfile
from pathlib import Path

from github.Repository import Repository

from maple_ci.errors import MapleError
from maple_ci.github.approval import approver
from maple_ci.github.delivery import SourceResult, truncate
from maple_ci.github.markdown import cell, code, plain
from maple_ci.github.runs import Approvals, blobs, held, run_set

VERSION = 1
CHECK_NAME = "maple / trace"
MAX_RESULT_BYTES = 256 << 10
MAX_ENTRIES = 500
MAX_MESSAGE = 2000
_SHA = re.compile(r"[0-9a-f]{40}")
_PATH = re.compile(r"(?!.*\.\.)[\w][\w./-]{0,299}")  # a checkout's relative path: no `..`, no leading `/` or `-`
_CLUSTER = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_ENTRY_KEYS = {"source", "cluster", "ok", "message"}
_UNPRINTABLE = re.compile(r"[^\t\n\x20-\x7e\u00a0-\uffff]")


def request(repo: Repository, at: tuple[str | None, str], results: list[SourceResult], check_sha: str,
            approvals: dict[str, str | None]) -> tuple[dict | None, str]:
    """What the trace job may trace, and why not when it may not yet. `at`: (a fork PR's head or
    None, the commit ported from)."""
    fork_head, sha = at
    sources = sorted({r["source"] for r in results if r["clusters"]})
    clusters = sorted({c["cluster"] for r in results for c in r["clusters"]})
    if not sources:
        return None, ""
    if fork_head is not None and approver(repo, fork_head) is None:
        return None, f"The trace waits for a maintainer's approval of the fork's commit `{fork_head}` (`/maple approve {fork_head}`)."
    if fork_head is None:
        asked, tree = Approvals(repo, approvals), blobs(repo, sha)
        for source in [s for s in sources if s in tree]:
            text = base64.b64decode(repo.get_git_blob(tree[source]).content).decode(errors="replace")
            if held(asked, sha, source, text, run_set(repo, sha, source, text)):
                return None, f"The trace waits: a fork's commit wrote what {code(source)} runs, and no maintainer approved it."
    made = {"version": VERSION, "commit": fork_head or sha, "sources": sources, "clusters": clusters, "check_sha": check_sha}
    try:
        return checked_request(made), ""
    except MapleError as error:  # a script name outside the allowlist: no trace, and the reply says so
        return None, f"Not traced: {plain(str(error))}."


def checked_request(data) -> dict:
    """A request as the trace job and the report read it: every field by its allowlist."""
    if not isinstance(data, dict) or set(data) != {"version", "commit", "sources", "clusters", "check_sha"}:
        raise MapleError("the trace request is not maple-ci's (its fields differ)")
    if data["version"] != VERSION or not all(_match(_SHA, data[k]) for k in ("commit", "check_sha")):
        raise MapleError("the trace request names no commit by its full SHA")
    if not (_all_match(_PATH, data["sources"]) and _all_match(_CLUSTER, data["clusters"])):
        raise MapleError("the trace request names a script or cluster outside what maple-ci accepts")
    return data


def _match(pattern: re.Pattern, value) -> bool:
    return isinstance(value, str) and pattern.fullmatch(value) is not None


def _all_match(pattern: re.Pattern, values) -> bool:
    return isinstance(values, list) and 0 < len(values) <= MAX_ENTRIES and all(_match(pattern, v) for v in values)


def run_request(data: dict, workspace: Path) -> dict:
    """In the unprivileged job: each requested script ported to each cluster, source and port traced
    in the sandbox (never outside it: no bubblewrap, no trace). The verdicts, as JSON data."""
    from maple_ci.port import port
    from maple_ci.trace.compare import gate

    data = checked_request(data)
    entries = []
    with tempfile.TemporaryDirectory(prefix="maple-trace-ports-") as out:
        for source in data["sources"]:
            path = workspace / source
            try:
                intent, results = port(str(path), data["clusters"], Path(out))
                results = gate(path, results, trusted=False, cluster=intent.source_cluster, gpus=intent.gpus_per_node)
            except MapleError as error:
                entries += [_entry(source, c, False, f"not traced: {error}") for c in data["clusters"]]
                continue
            entries += [_entry(source, r.cluster, _traced_ok(r), _trace_message(r)) for r in results]
    return {"version": VERSION, "commit": data["commit"], "results": entries}


def _entry(source: str, cluster: str, ok: bool, message: str) -> dict:
    return {"source": source, "cluster": cluster, "ok": ok, "message": message[:MAX_MESSAGE]}


def _traced_ok(result) -> bool:
    return all(c.ok for c in result.checks if c.name == "trace") and any(c.name == "trace" for c in result.checks)


def _trace_message(result) -> str:
    found = [c.message for c in result.checks if c.name == "trace"]
    return found[-1] if found else f"not traced: the port did not pass its static checks ({result.status})"


def read_result(text: str, data: dict) -> list[dict]:
    """The trace job's verdicts, as untrusted data: refused whole unless every field is as asked."""
    data = checked_request(data)
    if len(text.encode()) > MAX_RESULT_BYTES:
        raise MapleError(f"the trace result is over {MAX_RESULT_BYTES >> 10} KiB")
    try:
        result = json.loads(text)
    except ValueError as error:
        raise MapleError(f"the trace result is not JSON ({error.msg})") from None
    if not isinstance(result, dict) or set(result) != {"version", "commit", "results"} or result["version"] != VERSION:
        raise MapleError("the trace result is not maple-ci's (its fields differ)")
    if result["commit"] != data["commit"]:
        raise MapleError("the trace result is of another commit than the one asked for")
    entries = result["results"]
    if not isinstance(entries, list) or not entries or len(entries) > MAX_ENTRIES:
        raise MapleError("the trace result holds no verdicts, or too many")
    return [_checked_entry(e, data) for e in entries]


def _checked_entry(entry, data: dict) -> dict:
    if not isinstance(entry, dict) or set(entry) != _ENTRY_KEYS or not isinstance(entry["ok"], bool):
        raise MapleError("a verdict of the trace result is not maple-ci's (its fields differ)")
    if entry["source"] not in data["sources"] or entry["cluster"] not in data["clusters"]:
        raise MapleError("a verdict of the trace result names a script or cluster that was not asked for")
    if not isinstance(entry["message"], str) or len(entry["message"]) > MAX_MESSAGE:
        raise MapleError("a verdict's message is not text of at most 2000 characters")
    return {**entry, "message": _UNPRINTABLE.sub("?", entry["message"])}


def report(repo: Repository, data: dict, text: str) -> str:
    """The `maple / trace` check run on the request's commit: success when every port traced as
    its source, failure when one did not or the result was refused; its conclusion."""
    data = checked_request(data)
    try:
        entries = read_result(text, data)
    except MapleError as error:
        conclusion, summary = "failure", f"The trace job's result was refused: {plain(str(error))}. Nothing of it was used."
    else:
        conclusion = "success" if all(e["ok"] for e in entries) else "failure"
        summary = "\n".join(["| script | cluster | trace |", "| --- | --- | --- |"] + [
            f"| {cell(code(e['source']))} | {cell(code(e['cluster']))} | {'passed' if e['ok'] else 'failed'}: {plain(e['message'])} |"
            for e in entries])
    repo.create_check_run(name=CHECK_NAME, head_sha=data["check_sha"], status="completed", conclusion=conclusion,
                          output={"title": f"trace: {conclusion}", "summary": truncate(summary, 65535)})
    return conclusion
