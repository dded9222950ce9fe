"""The trace gate in the Action (issue 25 F), against the fake GitHub (tests/github/fake_github.py,
the stand-in for github.com): the port job says what may be traced (fork content only once a
maintainer approved that exact commit), the unprivileged job traces it in the real sandbox, and the
report job reads its result as untrusted data before it becomes the `maple / trace` check run."""

import json
from contextlib import nullcontext

import pytest
from scenarios import KNOWN, comment_payload
from test_github_action import action_env, read_outputs
from test_github_end_to_end import EXAMPLE
from test_github_security import Passing, fork_pr, materialize

from maple_ci.errors import MapleError
from maple_ci.github import trace_job
from maple_ci.github.action import run_action, run_trace_mode
from maple_ci.github.config import Config
from maple_ci.github.pipeline import Pipeline

APPROVAL = {"state": "success", "context": "maple-ci/approval", "description": "approved by @Codertocat"}


def _comment(fake, webhook, monkeypatch, tmp_path, number, body):
    config = Config(targets=["perlmutter"], verification={"default": "slurm"})
    pipeline = Pipeline(config, lambda ref: nullcontext(materialize(fake, ref, tmp_path)), env={}, backend=Passing())
    action_env(monkeypatch, fake, tmp_path, comment_payload(webhook, number, body))
    run_action(pipeline.port, KNOWN, config.sources, config.targets, pace=False, verify=pipeline.verify)
    return read_outputs(tmp_path / "output").get("trace-request", "")


def _request(commit="a" * 40, check_sha="b" * 40) -> dict:
    return {"version": 1, "commit": commit, "sources": ["jobs/train.sbatch"], "clusters": ["perlmutter"],
            "check_sha": check_sha}


def _result(**entry) -> str:
    verdict = {"source": "jobs/train.sbatch", "cluster": "perlmutter", "ok": True, "message": "traced alike"} | entry
    return json.dumps({"version": 1, "commit": "a" * 40, "results": [verdict]})


def test_a_fork_pr_is_traced_only_once_a_maintainer_approved_its_exact_commit(fake, webhook, monkeypatch, tmp_path):
    pull = fork_pr(fake)
    head = fake.refs["heads/feature"]
    assert _comment(fake, webhook, monkeypatch, tmp_path, pull["number"], "/maple port perlmutter") == ""
    assert f"The trace waits for a maintainer's approval of the fork's commit `{head}`" in fake.comments[-1]["body"]
    fake.create_status(APPROVAL, {}, head)  # what `/maple approve <head>` writes, from the bot's token
    request = json.loads(_comment(fake, webhook, monkeypatch, tmp_path, pull["number"], "/maple port perlmutter"))
    port_head = fake.refs["heads/maple/port-pr-1"]
    assert request == {"version": 1, "commit": head, "sources": ["jobs/train.sbatch"], "clusters": ["perlmutter"],
                       "check_sha": port_head}


def test_a_branch_of_the_repository_is_traced_at_the_commit_it_was_ported_from(fake, webhook, monkeypatch, tmp_path):
    fake.refs["heads/feature"] = fake.commit_files({"jobs/train.sbatch": EXAMPLE.read_text()}, [fake.refs["heads/main"]], "add")
    fake.permissions["Codertocat"] = "write"
    pull = fake.open_pull("feature", "main")
    request = json.loads(_comment(fake, webhook, monkeypatch, tmp_path, pull["number"], "/maple port perlmutter"))
    assert request["commit"] == fake.refs["heads/feature"] and request["sources"] == ["jobs/train.sbatch"]


def test_the_trace_job_traces_source_and_port_in_the_sandbox_and_outputs_its_verdicts(tmp_path, monkeypatch):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "train.sbatch").write_text(EXAMPLE.read_text())
    monkeypatch.setenv("MAPLE_TRACE_REQUEST", json.dumps(_request() | {"clusters": ["polaris"]}))
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    assert run_trace_mode("trace", tmp_path) == 0
    result = json.loads(read_outputs(tmp_path / "output")["trace-result"])
    assert result["commit"] == "a" * 40
    [verdict] = result["results"]
    assert verdict["source"] == "jobs/train.sbatch" and verdict["cluster"] == "polaris"
    assert verdict["message"].startswith(("the port runs the source's program", "the trace of the port differs"))


def test_the_report_turns_a_valid_result_into_the_trace_check_run_with_its_text_made_inert(fake, repo):
    forged_text = "@maintainer see [this](https://evil.example) | col"
    assert trace_job.report(repo, _request(), _result(ok=False, message=forged_text)) == "failure"
    [run] = fake.check_runs
    assert run["name"] == "maple / trace" and run["head_sha"] == "b" * 40 and run["conclusion"] == "failure"
    summary = run["output"]["summary"]
    assert "@\u200bmaintainer" in summary and "](https" not in summary and "\\| col" in summary
    assert trace_job.report(repo, _request(), _result()) == "success"


@pytest.mark.parametrize("forged, why", [
    (_result().replace("a" * 40, "c" * 40), "another commit"),
    (_result(cluster="frontier"), "not asked for"),
    (_result(source="../../etc/passwd"), "not asked for"),
    (_result(ok="yes"), "fields differ"),
    (json.dumps({"version": 1, "commit": "a" * 40, "results": [json.loads(_result())["results"][0] | {"run": "x"}]}),
     "fields differ"),
    (_result(message="x" * 2001), "2000 characters"),
    ("not json", "not JSON"),
    (_result(message="x" * (300 << 10)), "KiB"),
])
def test_a_forged_or_malformed_result_is_refused_whole_and_fails_the_check(fake, repo, forged, why):
    with pytest.raises(MapleError, match=why):
        trace_job.read_result(forged, _request())
    assert trace_job.report(repo, _request(), forged) == "failure"
    assert "was refused" in fake.check_runs[-1]["output"]["summary"]


@pytest.mark.parametrize("change", [{"commit": "main"}, {"sources": ["/etc/passwd"]}, {"sources": ["-rf"]},
                                    {"clusters": ["Perlmutter; rm"]}, {"extra": 1}, {"sources": []}])
def test_a_request_outside_the_allowlists_is_refused(change):
    with pytest.raises(MapleError):
        trace_job.checked_request(_request() | change)


def test_a_script_name_outside_the_allowlist_is_not_traced_and_the_reply_says_so(fake, repo):
    head = fake.refs["heads/main"]
    results = [{"source": "jobs/train $(id).sbatch", "intent": {}, "clusters": [{"cluster": "perlmutter"}]}]
    made, why = trace_job.request(repo, (head, head), results, "b" * 40, {})
    assert made is None and why.startswith("The trace waits")  # an unapproved fork head: nothing asked yet
    fake.create_status(APPROVAL, {}, head)
    fake.permissions["Codertocat"] = "write"
    made, why = trace_job.request(repo, (head, head), results, "b" * 40, {})
    assert made is None and why.startswith("Not traced:") and "outside what maple-ci accepts" in why
