"""The bot PR's title and description (a status table per ported script), across requests.

One PR collects every request on a branch (`/maple port perlmutter`, then `/maple port aurora`):
its description keeps, in a hidden comment, what earlier requests reported, so the new body
describes every (script, cluster) on the branch, not only the last request's.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from maple_ci.github.checks import checks_passed
from maple_ci.github.delivery import BODY_LIMIT, TITLE_LIMIT, PortResult, truncate
from maple_ci.github.markdown import cell, code, plain

_STATE = re.compile(r"<!-- maple-ci results ([A-Za-z0-9_=-]+) -->")
_DROPPED = ("content", "suggestions")  # large, and the description does not show them


def previous_results(body: str | None) -> list[PortResult]:
    """What an earlier request put in the PR's description; [] when there is none or it is damaged
    (anyone with write access can edit the description)."""
    found = _STATE.findall(body or "")
    try:
        data = json.loads(base64.urlsafe_b64decode(found[-1])) if found else []
    except (binascii.Error, ValueError):
        return []
    if not isinstance(data, list) or not all(
            isinstance(r, dict) and isinstance(r.get("source"), str) and isinstance(r.get("intent"), dict)
            and isinstance(r.get("clusters"), list) and all(_cluster_ok(c) for c in r["clusters"]) for r in data):
        return []
    return [{**r, "clusters": [{**c, "content": "", "suggestions": []} for c in r["clusters"]]} for r in data]


def _cluster_ok(c) -> bool:
    return (isinstance(c, dict) and all(isinstance(c.get(k), str) for k in ("cluster", "path", "template", "verification"))
            and isinstance(c.get("checks"), list) and all(isinstance(k, dict) and isinstance(k.get("ok"), bool)
                                                         and isinstance(k.get("name"), str) and isinstance(k.get("message"), str)
                                                         for k in c["checks"]))


def merged(earlier: list[PortResult], results: list[PortResult]) -> list[PortResult]:
    """Earlier results updated by this request's, by (script, cluster): a cluster ported again is
    replaced, one not ported again is kept as it was reported."""
    by_source = {r["source"]: r for r in earlier}
    for result in results:
        fresh = {c["cluster"] for c in result["clusters"]}
        kept = [c for c in by_source.get(result["source"], {"clusters": []})["clusters"] if c["cluster"] not in fresh]
        by_source[result["source"]] = {**result, "clusters": kept + list(result["clusters"])}
    return list(by_source.values())


def describe(earlier: list[PortResult], results: list[PortResult]) -> str:
    """The PR body: every script on the branch, with the state that lets the next request merge."""
    everything = merged(earlier, results)
    text = render_pr_body(everything)
    state = [{**r, "clusters": [{k: v for k, v in c.items() if k not in _DROPPED} for c in r["clusters"]]} for r in everything]
    hidden = f"\n<!-- maple-ci results {base64.urlsafe_b64encode(json.dumps(state).encode()).decode()} -->\n"
    if len(text) + len(hidden) > BODY_LIMIT:
        hidden = ""  # too much to carry: the next request describes only itself, but the body fits
    return truncate(text, BODY_LIMIT - len(hidden)) + hidden


def title_for(earlier: list[PortResult], results: list[PortResult]) -> str:
    """`maple: port <scripts> to <clusters>`, on one line and within GitHub's 256 characters."""
    everything = merged(earlier, results)
    sources = ", ".join(sorted({" ".join(r["source"].split()) for r in everything}))
    clusters = ", ".join(dict.fromkeys(c["cluster"] for r in everything for c in r["clusters"]))
    head, tail = "maple: port ", f" to {clusters}"
    room = TITLE_LIMIT - len(head) - len(tail)
    return head + (sources if len(sources) <= room else sources[: room - 1] + "…") + tail


# Shown in the PR body, in this order, from the JobIntent.
INTENT_FIELDS = ("source_cluster", "scheduler", "launcher", "framework", "strategy", "nodes", "gpus_per_node",
                 "world_size", "entrypoint", "script_args", "walltime", "modules", "configs")
VERIFICATION_MARKS = {"pending": "⏳", "passed": "✅", "failed": "❌", "error": "❌", "skipped": "⏭️"}


def render_pr_body(results: list[PortResult]) -> str:
    """The PR description: a status table per ported script and what was extracted from it."""
    parts = ["Launch scripts ported by maple-ci.", ""]
    for result in results:
        parts += [f"### {code(result['source'])}", ""]
        if result.get("provenance"):
            source = result["provenance"]
            parts += [f"Ported from {code(source['repository'])} at {code(source['commit'])}, "
                      f"requested in {code(source['request'])}.", ""]
        parts += [
            "| Cluster | Script | Template | Static checks | Verification | Log |",
            "|---|---|---|---|---|---|",
        ]
        for c in result["clusters"]:
            checks = f"{'✅' if all(check['ok'] for check in c['checks']) else '❌'} {checks_passed(c)}"
            verification = f"{VERIFICATION_MARKS.get(c['verification'], '')} {c['verification']}".strip()
            log = f"[log]({c['log_url']})" if c["log_url"] else "—"
            parts.append(f"| {c['cluster']} | {cell(code(c['path']))} | {cell(code(c['template']))} | {checks} | "
                         f"{verification} | {log} |")
        notes = [f"{c['cluster']}: {c['note']}" for c in result["clusters"] if c.get("note")] + result.get("notes", [])
        if notes:
            parts += [""] + [f"- {plain(note)}" for note in notes]
        intent = result["intent"]
        parts += ["", "<details><summary>What was extracted</summary>", "", "| Field | Value |", "|---|---|"]
        parts += [f"| {name} | {cell(code(_show(intent[name])))} |" for name in INTENT_FIELDS if intent.get(name) not in (None, [], {})]
        parts += ["", "</details>", ""]
        if intent.get("missing"):
            parts += [f"**Not found in the script:** {plain(', '.join(map(str, intent['missing'])))}; defaults were used.", ""]
    return "\n".join(parts)


def _show(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(map(str, value))
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)
