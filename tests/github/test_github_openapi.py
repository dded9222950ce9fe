"""Every request the bot sends must match GitHub's own OpenAPI description.

Prism (@stoplight/prism-cli) serves the description (@octokit/openapi, cut to the operations we
use by cut_spec.py) as a validating mock: a request that breaks the description gets a 422 whose
`sl-violations` header names the rule. Prism answers with canned examples, so ids do not line up
across calls: each request type is checked on its own, never a flow's end state (the fake does that).
"""

import json
import re
import socket
import subprocess
import sys
import time
from urllib.parse import quote

import pytest
import requests
from fake_github import FakeGitHub
from npm_modules import HERE, node_module
from github import GithubException
from scenarios import SCRIPT, comment_plan, nightly, port_results

from maple_ci.github.approval import approve, approver
from maple_ci.github.bot import permission, run_plan
from maple_ci.github.config import Config, Schedule
from maple_ci.github.checks import check_runs
from maple_ci.github.delivery import connect, deliver, post_review

SHA = "6dcb09b5b57875f334f61aebed695e2e4193db5e"


@pytest.fixture(scope="session")
def prism(tmp_path_factory):
    with socket.socket() as s:  # a free port; Prism binds it a moment later
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    spec = tmp_path_factory.mktemp("openapi") / "github.json"
    full = node_module("@octokit/openapi/generated/api.github.com.json")
    subprocess.run([sys.executable, str(HERE / "cut_spec.py"), str(full), str(spec), url], check=True)
    log = spec.with_suffix(".log").open("w+")
    server = subprocess.Popen([str(node_module(".bin/prism")), "mock", "--host", "127.0.0.1", "--port", str(port), str(spec)],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(url, timeout=1)  # any answer, even 404, means it is serving
                break
            except requests.ConnectionError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"prism did not start:\n{log.read()}")
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(10)
        log.close()


def test_bot_calls_through_pygithub_match_the_description(prism):
    """Point PyGithub at Prism: any 4xx raises a GithubException carrying Prism's violations.
    (Reactions are checked by the replay below: PyGithub asks for a preview media type for them.)"""
    repo = connect("ghs_test", prism, pace=False).get_repo("octocat/Hello-World")
    pr = repo.get_pull(1)
    results = port_results()
    suggestions = [s for c in results[0]["clusters"] for s in c["suggestions"]]
    assert post_review(pr, SHA, suggestions) is not None
    assert len(check_runs(repo, SHA, results)) == 2  # aurora: one create and two updates of annotations
    repo.get_issue(1).create_comment("maple-ci: done")
    assert permission(repo, "octocat") in ("admin", "write", "read", "none")


def test_every_request_of_the_bot_flows_matches_the_description(prism, fake, repo, source_pr, webhook):
    """Replay to Prism one request of each kind the bot sent to the stateful fake in whole flows,
    including the branches Prism's examples never lead to (no branch yet, no PR yet)."""
    plan, _ = comment_plan(webhook, source_pr["number"])
    run_plan(repo, plan, lambda *args: port_results())  # creates branch, commit, PR, review, check runs
    run_plan(repo, plan, lambda *args: port_results())  # finds them again, changes nothing
    deliver(repo, "pr-1", {"scripts/aurora/train.sh": "changed\n"}, "feature", "new title", "new body")  # fast-forward, PR edit
    post_review(repo.get_pull(fake.pulls[1]["number"]), fake.refs["heads/maple/port-pr-1"], [])  # the review is superseded
    fake.refs["heads/other"] = fake.commit_files({"jobs/other.sh": SCRIPT}, [fake.refs["heads/main"]], "other")
    dressed = Config(pull_requests={"labels": ["hpc"], "reviewers": ["mona"], "assignees": ["hubot"]})
    run_plan(repo, comment_plan(webhook, fake.open_pull("other", "main")["number"])[0], lambda *args: port_results(),
             settings=dressed)  # a new PR gets the configured labels, reviewers and assignees
    for aurora in ("failed", "failed", "passed"):  # nightly: report issue opened, updated, closed
        nightly(fake, repo, {"aurora": aurora}, Schedule())
    approve(repo, fake.refs["heads/feature"], "Codertocat")  # a commit status, read back as the combined status
    assert approver(repo, fake.refs["heads/feature"]) == "Codertocat"
    fake.fail_routes[r"POST /pulls"] = 422  # the PR cannot be opened: the branch just made is deleted
    with pytest.raises(GithubException):
        deliver(repo, "gone", {"scripts/aurora/x.sh": "x\n"}, "main", "t", "b")
    assert "heads/maple/port-gone" not in fake.refs

    first = {}
    for request in fake.requests:
        first.setdefault(request["route"], request)
    assert set(first) == {route for route, _ in FakeGitHub.routes}, "a fake endpoint went untested"
    for route, r in first.items():
        # Prism cannot match a path parameter holding "/", which git refs ("heads/main") do;
        # GitHub accepts the escaped form as well. Accept is JSON because PyGithub asks for the
        # reactions preview, which GitHub answers with JSON but Prism cannot serialize.
        path = re.sub(r"(/git/refs?/)(.+)", lambda m: m[1] + quote(m[2], safe=""), r["path"])
        body = json.dumps(r["body"]) if r["method"] in ("POST", "PATCH", "PUT") else None
        answer = requests.request(r["method"], prism + path, params=r["query"], data=body,
                                  headers={"Content-Type": "application/json", "Accept": "application/json"}, timeout=10)
        assert answer.status_code < 400, f"{route}: {answer.status_code} {answer.headers.get('sl-violations') or answer.text}"
