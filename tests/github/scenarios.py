"""Port results and requests shared by the fake-GitHub and OpenAPI tests (what the pipeline would return)."""

import re

from maple_ci.github.bot import run_plan
from maple_ci.github.events import plan_event
from maple_ci.verify.substitute import VerifyResult

KNOWN = ("perlmutter", "aurora", "polaris")
SCRIPT = "#!/bin/bash\n#SBATCH -N 2\nmodule load pytorch\nsrun python train.py\n"


def run_result(ok: bool, log: str, log_url: str | None, message: str) -> VerifyResult:
    """What a fake verification runner reports: the one result type of a run."""
    return VerifyResult(ok=ok, backend="fake", state="COMPLETED" if ok else "FAILED", log=log, log_url=log_url or "",
                        message=message)


def cluster_result(cluster, failing=0, suggestions=()):
    checks = [{"name": "shellcheck", "ok": True, "message": "clean"}]
    checks += [{"name": f"policy-{i}", "ok": False, "message": f"problem {i}", "line": 2, "severity": "warning"} for i in range(failing)]
    return {"cluster": cluster, "path": f"scripts/{cluster}/train.sh", "content": SCRIPT.replace("2", cluster),
            "template": f"{cluster}/torchrun-ddp", "checks": checks, "verification": "passed",
            "log_url": f"https://ci.example/{cluster}/1", "suggestions": list(suggestions)}


def port_results():
    """jobs/train.sh ported to perlmutter (a two-line suggestion) and aurora (120 warnings: three annotation batches)."""
    suggestions = [
        {"path": "scripts/aurora/train.sh", "start_line": 3, "line": 3, "body": "module load frameworks", "message": "Aurora's module"},
        {"path": "scripts/perlmutter/train.sh", "start_line": 3, "line": 4, "body": "module load pytorch/2.3\nsrun --gpu-bind=none python train.py"},
    ]
    return [{
        "source": "jobs/train.sh",
        "intent": {"scheduler": "slurm", "launcher": "srun", "framework": "pytorch", "nodes": 2, "entrypoint": "train.py",
                   "script_args": ["--lr", "3e-4|x"], "modules": [], "missing": ["walltime"]},
        "clusters": [cluster_result("perlmutter", suggestions=suggestions[1:]), cluster_result("aurora", failing=120, suggestions=suggestions[:1])],
    }]


def comment_payload(webhook, number, body="/maple port perlmutter aurora"):
    """The recorded issue_comment payload, moved onto PR `number` with `body`."""
    payload = webhook("issue_comment", action="created")
    payload["comment"]["body"] = body
    payload["issue"].update(number=number, pull_request={})
    return payload


def comment_plan(webhook, number, body="/maple port perlmutter aurora"):
    payload = comment_payload(webhook, number, body)
    return plan_event("issue_comment", payload, KNOWN), payload["comment"]["id"]


def nightly(fake, repo, conclusions, report):
    """One scheduled run where each cluster's ported script verifies as `conclusions` says (passed/failed)."""
    plan = plan_event("schedule", {"repository": {"default_branch": "main"}}, KNOWN, targets=tuple(conclusions))

    def verify(command, results, commit, skip, progress):
        for c in results[0]["clusters"]:
            c.update(verification=conclusions[c["cluster"]], note=f"{c['cluster']} run {conclusions[c['cluster']]}")
        return results

    collected = [{"source": "scripts", "intent": {}, "clusters": [
        cluster_result(cluster) | {"verification": "pending", "log_url": f"https://ci.example/{cluster}/{len(fake.requests)}"}
        for cluster in conclusions]}]
    return run_plan(repo, plan, lambda *args: collected, verify=verify, report=report)


def workflow_commands(log):
    """[(command, {property: value}, message)] for each workflow command line, read as the runner
    reads them (`::name key=value,key=value::message`, properties percent-escaped)."""
    def unescape(text):
        for escaped, char in (("%3A", ":"), ("%2C", ","), ("%0D", "\r"), ("%0A", "\n"), ("%25", "%")):
            text = text.replace(escaped, char)
        return text

    found = []
    for m in re.finditer(r"(?m)^::(?P<name>[\w-]+)(?: (?P<props>[^:]*))?::(?P<message>.*)$", log):
        props = dict(item.split("=", 1) for item in (m["props"] or "").split(",") if item)
        found.append((m["name"], {key: unescape(value) for key, value in props.items()}, unescape(m["message"])))
    return found
