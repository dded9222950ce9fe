"""`maple bench`: accuracy over the generated case suite, and the verified runs of some of its ports
(latency is bench_latency.py).

The accuracy suite (benchmarks/accuracy/suite.yaml) expands into cases: a source (a launch script
in a documented style, or a request in words) for one model and node count, ported to one target.
Extraction is scored per field against the values the case was built from; generation is scored
per case: every expected property of the generated script holds and its static checks pass.
"""

import itertools
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

import yaml
from pydantic import BaseModel

from . import schedulers
from .errors import MapleError
from .extract import extract, extract_script
from .library import GENERIC, get_template
from .paths import bundled
from .port import PortResult, port_intent
from .profiles import get_profile, load_profiles
from .programs import relabelled

SCORED_FIELDS = ("scheduler", "launcher", "framework", "strategy", "nodes", "gpus_per_node", "world_size",
                 "entrypoint", "script_args", "walltime", "account", "source_cluster")
_RENDEZVOUS = re.compile(r"MASTER_ADDR|rdzv_endpoint|main_process_ip|hostfile|PBS_NODEFILE")


class AccuracyCase(BaseModel):
    id: str
    kind: str  # "script" | "request"
    text: str
    target: str
    expect: dict  # JobIntent fields the extraction must yield


def suite_path() -> Path:
    return bundled("benchmarks") / "accuracy" / "suite.yaml"


def suite_targets() -> list[str]:
    """The clusters the suite's cases are ported to: every profile, so a new cluster is covered by being there."""
    return sorted(load_profiles())


def expand_cases(suite: dict) -> list[AccuracyCase]:
    """Every style/phrasing x model x node count, each ported to targets drawn with a fixed seed (a
    round-robin would tie node counts to clusters, since both cycle)."""
    rng = random.Random(0)
    cases = []
    targets = suite_targets()

    def add(kind: str, name: str, text: str, expect: dict) -> None:
        for target in rng.sample(targets, suite["targets_per_source"]):
            cases.append(AccuracyCase(id=f"{name}->{target}", kind=kind, text=text, target=target, expect=expect))

    for (style_name, style), (model_name, model), nodes in itertools.product(
            suite["styles"].items(), suite["models"].items(), suite["node_counts"]):
        for gpus in style["gpus"]:
            slots = dict(nodes=nodes, gpus=gpus, world=nodes * gpus, entry=model["entry"], args=shlex.join(model["args"]))
            expect = style["expect"] | dict(nodes=nodes, gpus_per_node=gpus, world_size=nodes * gpus,
                                            entrypoint=model["entry"], script_args=model["args"] + style.get("extra_args", []))
            add("script", f"{style_name}/{model_name}/{nodes}n", style["text"].format(**slots), expect)
    for (index, phrasing), (model_name, model), nodes in itertools.product(
            enumerate(suite["phrasings"]), suite["models"].items(), suite["node_counts"]):
        gpus = 4
        slots = dict(model=model["name"], entry=model["entry"], nodes=nodes, nodes_word=suite["nodes_words"][nodes],
                     gpus=gpus, world=nodes * gpus)
        expect = phrasing["expect"] | dict(nodes=nodes, gpus_per_node=gpus, entrypoint=model["entry"])
        add("request", f"request{index}/{model_name}/{nodes}n", phrasing["text"].format(**slots), expect)
    return cases


def load_cases(subset: Optional[int] = None) -> list[AccuracyCase]:
    cases = expand_cases(yaml.safe_load(suite_path().read_text()))
    if subset and subset < len(cases):  # a fixed spread over styles, phrasings and targets, not the first N
        cases = sorted(random.Random(0).sample(cases, subset), key=cases.index)
    return cases


def fits_target(case: AccuracyCase) -> bool:
    """Whether any queue of the target takes this many nodes (Anvil's GPU partition stops at 3)."""
    return any(q.min_nodes <= case.expect["nodes"] <= q.max_nodes for q in get_profile(case.target).queues)


def generation_failures(case: AccuracyCase, result: PortResult) -> list[str]:
    """What is wrong with one generated script; empty when the case passes. A job no queue of the
    target can take passes only when the port says so (a failed node-limit check)."""
    if not fits_target(case):
        return _unfit_failures(result)
    if result.status != "ok":
        return [f"static check {c.name}: {c.message}" for c in result.checks if not c.ok and c.severity == "error"]
    profile = get_profile(case.target)
    back = extract_script(result.script)
    return [*_header_failures(result.script, profile), *_size_failures(case, back, profile),
            *_program_failures(case, back), *_template_failures(case, get_template(result.template)),
            *_rendezvous_failures(case, result.script)]


def _unfit_failures(result: PortResult) -> list[str]:
    """A job that fits no queue of the target: the port must refuse it by a failed node-limit check."""
    refused = any(c.name == "nodes" and not c.ok and c.severity == "error" for c in result.checks)
    return [] if refused else ["the job fits no queue of the target, and the port did not say so"]


def _rendezvous_failures(case: AccuracyCase, script: str) -> list[str]:
    if case.expect["nodes"] > 1 and not _RENDEZVOUS.search(script):
        return ["multi-node script without a rendezvous (MASTER_ADDR, rdzv endpoint or hostfile)"]
    return []


def _header_failures(script: str, profile) -> list[str]:
    if not script.lstrip().startswith("#!") or schedulers.get(profile.scheduler).prefix not in script:
        return [f"no {profile.scheduler} directives"]
    return []


def _size_failures(case: AccuracyCase, back, profile) -> list[str]:
    """The job size read back from the script against the expected one and the target's nodes."""
    failures = []
    if back.nodes != case.expect["nodes"]:
        failures.append(f"nodes {back.nodes} != {case.expect['nodes']}")
    if not back.gpus_per_node or back.gpus_per_node > profile.devices_per_node:
        failures.append(f"{back.gpus_per_node} ranks per node on a {profile.devices_per_node}-device node")
    if back.nodes and back.gpus_per_node and back.world_size != back.nodes * back.gpus_per_node:
        failures.append(f"world size {back.world_size} != {back.nodes} x {back.gpus_per_node}")
    return failures


def _program_failures(case: AccuracyCase, back) -> list[str]:
    failures = []
    if back.entrypoint != case.expect["entrypoint"]:
        failures.append(f"entrypoint {back.entrypoint!r} != {case.expect['entrypoint']!r}")
    args = case.expect.get("script_args")
    args = None if args is None else relabelled(args, case.expect, back)
    if args is not None and back.script_args[:len(args)] != args:
        failures.append(f"script args {back.script_args} != {args}")
    return failures


def _template_failures(case: AccuracyCase, template) -> list[str]:
    failures = []
    for field in ("framework", "strategy"):
        # The generic family starts any strategy's program in the source's process model (which the
        # read-back gate checked): the strategy is the program's own, not the template's.
        kept = field == "strategy" and template.strategy == GENERIC
        if field in case.expect and getattr(template, field) != case.expect[field] and not kept:
            failures.append(f"template {template.id} has {field} {getattr(template, field)}, expected {case.expect[field]}")
    return failures


def run_accuracy(cases: list[AccuracyCase], progress: Callable[[int, int], None] = lambda done, total: None) -> dict:
    field_hits = {field: [0, 0] for field in SCORED_FIELDS}
    per_cluster: dict[str, list[int]] = {}
    failures, unsupported = [], []
    out_dir = Path(tempfile.mkdtemp(prefix="maple-bench-"))
    for number, case in enumerate(cases, 1):
        progress(number, len(cases))
        intent = extract(case.text, case.id)
        wrong = _score_extraction(case, intent, field_hits)
        result, problems = _generate(case, intent, out_dir)
        if result is not None and result.status == "unsupported":
            unsupported.append({"case": case.id, "reason": result.reason})
            continue
        tally = per_cluster.setdefault(case.target, [0, 0])
        tally[0] += not problems
        tally[1] += 1
        if problems:
            failures.append({"case": case.id, "kind": case.kind, "extraction_wrong": wrong, "problems": problems})
    return _accuracy_report(len(cases), field_hits, per_cluster, unsupported, failures)


def _score_extraction(case: AccuracyCase, intent, field_hits: dict[str, list[int]]) -> list[str]:
    """Counts each scored field of the case into field_hits ([correct, total]); the fields it got wrong."""
    scored = {field: expected for field, expected in case.expect.items() if field in field_hits}
    for field, expected in scored.items():
        field_hits[field][1] += 1
        field_hits[field][0] += getattr(intent, field) == expected
    return [field for field, expected in scored.items() if getattr(intent, field) != expected]


def _generate(case: AccuracyCase, intent, out_dir: Path) -> tuple[Optional[PortResult], list[str]]:
    """The port of one case to its target and what is wrong with it (none when unsupported)."""
    try:
        result = port_intent(intent, [case.target], case.id.replace("/", "_"), out_dir)[0]
    except MapleError as exc:
        return None, [f"not generated: {exc}"]
    if result.status == "unsupported":
        return result, []
    return result, generation_failures(case, result)


def _accuracy_report(count: int, field_hits: dict, per_cluster: dict, unsupported: list, failures: list) -> dict:
    passed = sum(p for p, _ in per_cluster.values())
    generated = count - len(unsupported)
    return {
        "cases": count,
        "generation": {"passed": passed, "scored": generated, "accuracy": passed / generated if generated else 0.0},
        "extraction": {f: {"correct": c, "total": t, "accuracy": c / t} for f, (c, t) in field_hits.items() if t},
        "per_cluster": {k: {"passed": p, "total": t, "accuracy": p / t} for k, (p, t) in sorted(per_cluster.items())},
        "unsupported": unsupported,
        "failures": failures,
    }


def run_verified(cases: list[AccuracyCase], count: int, timeout: int = 300) -> dict:
    """Generated 2-node scripts for Slurm targets, run through verify_slurm with the mini-app in place
    of the training program, on targets whose nodes fit the local test cluster's (2 nodes, 4 GPUs
    each, 128 CPUs). Jobs need the site's `module` command: on the test cluster run with
    BASH_ENV=tests/cluster/site-env.sh, as its README says."""
    chosen = _local_cases(cases, count)
    with tempfile.TemporaryDirectory(prefix="maple-bench-verify-", dir=Path.cwd()) as out:
        # Sites without a PyTorch environment run the user's: a venv over this interpreter's packages.
        venv = Path(out) / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
        runs = [_verify_case(case, Path(out), venv, timeout) for case in chosen]
    return {"passed": sum(r["ok"] for r in runs), "total": len(runs), "runs": runs}


def _fits_local(case: AccuracyCase) -> bool:
    """The test cluster's shape: tests/cluster/slurm.conf.in."""
    from .verify.slurm import BACKEND

    profile = get_profile(case.target)
    return (schedulers.get(profile.scheduler).verify_backend == BACKEND and profile.devices_per_node <= 4
            and profile.cores_per_node <= 128 and case.expect["nodes"] == 2)


def _local_cases(cases: list[AccuracyCase], count: int) -> list[AccuracyCase]:
    """Up to `count` script cases that fit the test cluster, round-robin over targets so a small
    count still covers several clusters."""
    by_target: dict[str, list[AccuracyCase]] = {}
    for case in cases:
        if case.kind == "script" and _fits_local(case):
            by_target.setdefault(case.target, []).append(case)
    return [c for group in itertools.zip_longest(*by_target.values()) for c in group if c][:count]


def _verify_case(case: AccuracyCase, out: Path, venv: Path, timeout: int) -> dict:
    """Ports one case, writes its script and runs it through verify_slurm with the mini-app."""
    from .python_env import ALL
    from .verify import miniapp_for
    from .verify.slurm import verify_slurm

    intent = extract(case.text, case.id)
    result = port_intent(intent, [case.target], case.id.replace("/", "_"), out, python_envs={ALL: str(venv)})[0]
    Path(result.path).parent.mkdir(parents=True, exist_ok=True)
    Path(result.path).write_text(result.script)
    start = time.perf_counter()
    verified = verify_slurm(Path(result.path), miniapp=miniapp_for(intent.framework, intent.strategy),
                            timeout=timeout, workdir=out)
    return {"case": case.id, "ok": verified.ok, "state": verified.state, "seconds": time.perf_counter() - start,
            "world_size": (verified.result or {}).get("world_size"), "message": verified.message}
