"""What a verification run says about speed: the all-reduce bus bandwidth and step time the
mini-app measured (its result line), the network NCCL/RCCL chose (its INFO lines), a real
program's loss and throughput lines (`maple verify --program`), and whether that is what the
target's profile expects (its `network`). Patterns: templates/metrics.yaml. Docs: docs/speed.md.

A run that works but over TCP sockets where the profile expects the Slingshot plugin or
InfiniBand, or whose bus bandwidth between nodes is far under the profile's line rate, fails:
it would train, slowly, and nothing else would say why.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

import yaml
from pydantic import BaseModel, Field

from ..paths import templates_dir

# Far under: measured bus bandwidth below this share of the line rate the ranks on one node can
# drive. NCCL's ring reaches most of the line rate at the mini-app's largest message; TCP
# sockets over the same wires get a few percent of it.
FAR_UNDER = 0.25
LOG_LINE_LIMIT = 400  # characters of an evidence line kept in the result


class Transport(BaseModel):
    name: str  # a templates/metrics.yaml transport ("ofi", "ib", "socket"), or "gloo" (TCP)
    label: str
    evidence: str = ""  # the log line it was read from


class ProgramMetric(BaseModel):
    format: str  # which templates/metrics.yaml format matched
    loss: Optional[float] = None  # the last loss line's value
    first_loss: Optional[float] = None
    throughput: Optional[float] = None  # the last throughput line's value, in `unit`
    unit: str = ""
    lines: int = 0


class Speed(BaseModel):
    """The speed figures of one run and the profile's expectation; `problems` fail the run."""

    step_time_s: Optional[float] = None
    loss: Optional[float] = None  # the mini-app's mean loss over ranks (the same for every strategy: a cross-check)
    allreduce: list[dict] = Field(default_factory=list)  # the mini-app's rows: bytes, time_us, algbw_gbps, busbw_gbps
    busbw_gbps: Optional[float] = None  # at the largest message
    nodes: int = 0
    ranks_per_node: int = 0
    transport: Optional[Transport] = None
    expected_transport: Optional[str] = None
    expected_busbw_gbps: Optional[float] = None  # line rate of the NICs the ranks on one node use
    source: str = ""  # where the profile's network facts come from
    program: Optional[ProgramMetric] = None
    problems: list[str] = Field(default_factory=list)


@lru_cache(maxsize=1)
def _patterns() -> dict:
    data = yaml.safe_load((templates_dir() / "metrics.yaml").read_text())
    return {"chosen": [re.compile(p) for p in data["chosen"]],
            "transports": [{**t, "network": re.compile(t["network"]), "loaded": re.compile(t["loaded"])}
                           for t in data["transports"]],
            "program": [{**f, "loss": re.compile(f["loss"]), "throughput": re.compile(f["throughput"])}
                        for f in data["program"]]}


def _transport(name: str, line: str) -> Transport:
    spec = next(t for t in _patterns()["transports"] if t["name"] == name)
    return Transport(name=name, label=spec["label"], evidence=line.strip()[:LOG_LINE_LIMIT])


def _named(network: str) -> Optional[str]:
    return next((t["name"] for t in _patterns()["transports"] if t["network"].search(network)), None)


def read_transport(log: str) -> Optional[Transport]:
    """The network NCCL/RCCL chose, from its INFO lines: a line naming the choice wins (sockets if
    any rank chose them: that rank's links set the pace), else the best transport that initialised;
    None when the log has no such line (NCCL_DEBUG not INFO, or no NCCL at all)."""
    chosen: dict[str, str] = {}
    for line in log.splitlines():
        for pattern in _patterns()["chosen"]:
            found = pattern.search(line)
            name = found and _named(found["name"].strip())
            if name:
                chosen.setdefault(name, line)
    order = [t["name"] for t in _patterns()["transports"]]
    if chosen:
        worst = max(chosen, key=order.index)
        return _transport(worst, chosen[worst])
    for spec in _patterns()["transports"]:
        line = next((line for line in log.splitlines() if spec["loaded"].search(line)), None)
        if line is not None:
            return _transport(spec["name"], line)
    return None


def _number(text: str) -> Optional[float]:
    try:
        return float(text)
    except ValueError:
        return None


def read_program_metrics(log: str) -> Optional[ProgramMetric]:
    """The loss and throughput of the first allowlisted format the log's lines match; None if none."""
    lines = log.splitlines()
    for spec in _patterns()["program"]:
        losses = [_number(m["value"]) for line in lines if (m := spec["loss"].search(line))]
        rates = [_number(m["value"]) for line in lines if (m := spec["throughput"].search(line))]
        losses, rates = [v for v in losses if v is not None], [v for v in rates if v is not None]
        if losses or rates:
            return ProgramMetric(format=spec["format"], loss=losses[-1] if losses else None,
                                 first_loss=losses[0] if losses else None, throughput=rates[-1] if rates else None,
                                 unit=spec["unit"], lines=max(len(losses), len(rates)))
    return None


def measure(log: str, result: Optional[dict], program: bool = False) -> Speed:
    """The figures of one run: the mini-app's result line (None when it printed none) and the log."""
    result = result or {}
    rows = [r for r in result.get("allreduce") or [] if isinstance(r, dict)]
    hosts = len(result.get("hostnames") or [])
    world = result.get("world_size") or 0
    transport = read_transport(log)
    if transport is None and result.get("backend") == "gloo":
        transport = Transport(name="gloo", label="gloo over TCP (no NCCL/RCCL: CPU run)")
    return Speed(step_time_s=result.get("step_time_s"), loss=result.get("loss"), allreduce=rows,
                 busbw_gbps=max(rows, key=lambda r: r.get("bytes", 0)).get("busbw_gbps") if rows else None,
                 nodes=hosts, ranks_per_node=world // hosts if hosts else 0, transport=transport,
                 program=read_program_metrics(log) if program else None)


def judge(speed: Speed, network) -> Speed:
    """`speed` with the profile's expectation (`network`: profiles.Network, or None where the
    profile states none) and the problems that fail the run."""
    if network is None:
        return speed
    used_nics = min(network.nics_per_node, speed.ranks_per_node) if speed.ranks_per_node else network.nics_per_node
    speed = speed.model_copy(update={"expected_transport": network.transport, "source": network.source,
                                     "expected_busbw_gbps": round(network.nic_gbps * used_nics, 1)})
    problems = []
    got = speed.transport.name if speed.transport else None
    if got == "socket" and network.transport != "socket":
        problems.append(f"runs, but over TCP sockets: {network.fix} ({speed.transport.evidence})")
    elif got not in (None, "gloo", network.transport):
        problems.append(f"NCCL chose {speed.transport.label} where {network.fabric} expects {network.transport}: "
                        f"{network.fix}")
    if speed.nodes > 1 and got != "gloo" and speed.busbw_gbps is not None \
            and speed.busbw_gbps < FAR_UNDER * speed.expected_busbw_gbps:
        problems.append(f"all-reduce bus bandwidth {speed.busbw_gbps} GB/s between {speed.nodes} nodes is far under "
                        f"the {speed.expected_busbw_gbps} GB/s line rate of {network.fabric} "
                        f"({used_nics} x {network.nic_gbps} GB/s; less than {FAR_UNDER:.0%})")
    return speed.model_copy(update={"problems": problems})


def summary(speed: Speed) -> str:
    """One line for a message: the figures that exist."""
    parts = []
    if speed.busbw_gbps is not None:
        parts.append(f"all-reduce busbw {speed.busbw_gbps} GB/s")
    if speed.step_time_s is not None:
        parts.append(f"step {speed.step_time_s} s")
    if speed.transport:
        parts.append(f"transport {speed.transport.name}")
    if speed.program and speed.program.loss is not None:
        parts.append(f"loss {speed.program.loss}")
    if speed.program and speed.program.throughput is not None:
        parts.append(f"{speed.program.throughput} {speed.program.unit}")
    return ", ".join(parts)


def _network(cluster: Optional[str]):
    """The profile's network for `cluster`; None for a cluster maple has no profile of (the local
    test cluster) or one whose profile states none."""
    from ..profiles import load_profiles

    profile = load_profiles().get((cluster or "").strip().lower())
    return profile.network if profile else None


def with_speed(result, cluster: Optional[str], program: bool = False):
    """A backend's VerifyResult with its speed measured and judged against `cluster`'s profile: a
    run that passed fails when the speed has a problem, and its message says which."""
    speed = judge(measure(result.log, result.result, program), _network(cluster))
    said = "; ".join(filter(None, [result.message, summary(speed), *speed.problems]))
    return result.model_copy(update={"speed": speed, "message": said, "ok": result.ok and not speed.problems})


def _size(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def rows(speed: Speed) -> list[tuple[str, str]]:
    """The figures as (what, value) rows, for the command line and the check run alike."""
    found = [(f"all-reduce {_size(r['bytes'])}", f"busbw {r['busbw_gbps']} GB/s (algbw {r['algbw_gbps']} GB/s, "
              f"{r['time_us']} µs)") for r in speed.allreduce if {"bytes", "busbw_gbps", "algbw_gbps", "time_us"} <= set(r)]
    if speed.step_time_s is not None:
        found.append(("step time", f"{speed.step_time_s} s"))
    if speed.loss is not None:
        found.append(("mini-app loss", f"{speed.loss}"))
    if speed.nodes:
        found.append(("ranks", f"{speed.nodes} node(s), {speed.ranks_per_node} per node"))
    if speed.transport:
        found.append(("transport", speed.transport.label + (f": `{speed.transport.evidence}`" if speed.transport.evidence else "")))
    if speed.expected_transport:
        found.append(("profile expects", f"{speed.expected_transport}, {speed.expected_busbw_gbps} GB/s line rate "
                      f"between nodes ({speed.source})"))
    if speed.program:
        p = speed.program
        found.append((f"program ({p.format})", f"loss {p.first_loss} → {p.loss}, {p.throughput} {p.unit}, {p.lines} lines"))
    return found
