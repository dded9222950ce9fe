"""The nightly speed trend on the portability dashboard (dashboard.py): per cluster, the all-reduce
bus bandwidth, step time and loss (verify/speed.py) of the last TREND_NIGHTS nightly runs: the
mini-app's loss, or a program's loss and throughput when the run was `--program`'s. Kept, like the rows, in a hidden
marker of the issue body; small on purpose (a few numbers a night per cluster).
"""

from __future__ import annotations

import re

from maple_ci.github.delivery import SourceResult
from maple_ci.github.markdown import plain
from maple_ci.github.state import pack, unpack

TREND_NIGHTS = 14
_TREND = re.compile(r"<!-- maple-ci trend ([A-Za-z0-9_=-]+) -->")
_FIELDS = ("busbw_gbps", "step_time_s", "loss", "throughput")  # after the day, in each night's list


def read_trend(body: str | None) -> dict[str, list[list]]:
    """cluster -> [[day, busbw_gbps, step_time_s, loss, throughput], ...] oldest first; empty when
    the body keeps none or it is damaged."""
    found = _TREND.findall(body or "")
    data = unpack(found[-1]) if found else None
    if not isinstance(data, dict) or not all(isinstance(k, str) and _nights_ok(v) for k, v in data.items()):
        return {}
    return data


def _nights_ok(nights) -> bool:
    return isinstance(nights, list) and all(
        isinstance(n, list) and len(n) == 1 + len(_FIELDS) and isinstance(n[0], str)
        and all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in n[1:]) for n in nights)


def _night(speed: dict, day: str) -> list:
    program = speed.get("program") or {}
    loss = program.get("loss") if program.get("loss") is not None else speed.get("loss")
    return [day, speed.get("busbw_gbps"), speed.get("step_time_s"), loss, program.get("throughput")]


def nightly_trend(trend: dict[str, list[list]], results: list[SourceResult], day: str) -> dict[str, list[list]]:
    """The trend with tonight's figures: per cluster the first run that measured any (a rerun the
    same day replaces that day's), at most TREND_NIGHTS nights kept."""
    trend = {cluster: list(nights) for cluster, nights in trend.items()}
    tonight: dict[str, list] = {}
    for r in results:
        for c in r["clusters"]:
            if c.get("speed") and c["cluster"] not in tonight:
                tonight[c["cluster"]] = _night(c["speed"], day)
    for cluster, night in tonight.items():
        nights = [n for n in trend.get(cluster, []) if n[0] != day] + [night]
        trend[cluster] = nights[-TREND_NIGHTS:]
    return trend


def _series(nights: list[list], index: int) -> str:
    values = [n[index] for n in nights if n[index] is not None]
    return " → ".join(f"{v:g}" for v in values) or "—"


def render_trend(trend: dict[str, list[list]]) -> list[str]:
    """The dashboard's speed section, oldest night first; nothing before the first measured night."""
    if not trend:
        return []
    lines = ["", "### Speed by cluster (nightly, oldest → newest)", "",
             "| Cluster | Nights | All-reduce busbw (GB/s) | Step time (s) | Loss | Program throughput |",
             "|---|---|---|---|---|---|"]
    for cluster, nights in sorted(trend.items()):
        span = f"{nights[0][0]} – {nights[-1][0]}" if nights else "—"
        lines.append(f"| {plain(cluster)} | {span} | " + " | ".join(_series(nights, i) for i in range(1, 1 + len(_FIELDS))) + " |")
    return lines


def trend_marker(trend: dict[str, list[list]]) -> str:
    return f"<!-- maple-ci trend {pack(trend)} -->" if trend else ""
