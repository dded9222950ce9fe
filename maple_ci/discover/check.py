"""`maple cluster check`: a listed profile against what the live system says now. Drift is a fact the
profile states that a query contradicts: a queue gone or renamed, a limit changed, a module gone,
another node shape. A fact no query answered is not drift; it is reported as not checked."""

from __future__ import annotations

from . import Fact
from .modules import listing


def _compare(drift: list[str], what: str, stated, fact: Fact | None) -> None:
    if fact is not None and fact.confirmed and fact.value != stated:
        drift.append(f"{what}: the profile says {stated!r}, `{fact.command}` says {fact.value!r}")


def _queues(profile, fact: Fact, drift: list[str]) -> None:
    if not fact.confirmed:
        return
    live = {q["name"]: q for q in fact.value}
    for queue in profile.queues:
        now = live.get(queue.name)
        if now is None:
            drift.append(f"queue {queue.name}: not among `{fact.command}`'s queues ({', '.join(live) or 'none'})")
            continue
        _compare(drift, f"queue {queue.name} max_walltime", queue.max_walltime, Fact(now["max_walltime"], fact.command))
        _compare(drift, f"queue {queue.name} max_nodes", queue.max_nodes, Fact(now["max_nodes"], fact.command))


def _modules(profile, fact: Fact, drift: list[str]) -> None:
    """Each module a framework set-up loads from the default module path must still be listed."""
    if not fact.confirmed:
        return
    names, _ = listing(fact.value)
    available = set(names) | {name.split("/")[0] for name in names}
    for framework, setup in profile.frameworks.items():
        if setup.module_use:  # loaded from a folder the listing does not cover
            continue
        for module in setup.modules:
            if module not in available:
                drift.append(f"frameworks.{framework}: module {module} is not in `{fact.command}`")


def drift(profile, facts: dict[str, Fact], module_text: Fact) -> list[str]:
    """What the live facts contradict in `profile` (a ClusterProfile); empty when nothing does."""
    found: list[str] = []
    _compare(found, "scheduler", profile.scheduler, facts["scheduler"])
    if profile.scheduler != facts["scheduler"].value:
        return found
    for field in ("gpus_per_node", "cores_per_node", "cpu_arch", "account_required"):
        _compare(found, field, getattr(profile, field), facts.get(field))
    # The CPUs the scheduler counts: its own count where it differs from the cores, else the cores.
    _compare(found, "the scheduler's CPUs per node", profile.cpus_per_node,
             facts.get("scheduler_cpus_per_node") or facts["cores_per_node"])
    _queues(profile, facts["queues"], found)
    _modules(profile, module_text, found)
    return found


def unchecked(facts: dict[str, Fact]) -> list[str]:
    """The facts no query answered here, with the query that would."""
    return sorted({f"`{fact.command}`" for fact in facts.values() if not fact.confirmed})
