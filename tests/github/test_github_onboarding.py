"""Installing the bot in a fresh repository, as a maintainer would, end to end: the workflows that
`maple init` writes, the onboarding PR, its merge, a `/maple port` comment, nightly runs with a
regression and a recovery, and the dashboard at each step.

Real: `maple action`'s path (run_configured -> run_action -> plan -> run_plan), the pipeline
(extract, port, static checks, debug agent), GitHub's recorded webhook payloads
(@octokit/webhooks-examples). Stand-ins: github.com is tests/github/fake_github.py; the checkout is the
fake's tree written to a temp dir; a merge is done on the fake's refs as GitHub's merge button
would; verification is `Center`, which fails with a real NCCL error line on a bad night."""

import contextlib
import json
import tempfile
from pathlib import Path

import pytest
from scenarios import comment_payload, run_result
from test_github_action import action_env
from test_github_dashboard import edited
from test_github_end_to_end import NCCL_LOG

from maple_ci.github.action import run_configured
from maple_ci.github.dashboard import read_rows, row_key
from maple_ci.github.onboarding import TITLE
from maple_ci.github.pipeline import Pipeline
from maple_ci.init_config import workflows

EXAMPLE = Path(__file__).parents[2] / "examples" / "polaris_mpiexec_ddp.pbs"
KNOWN = ["aurora", "frontier", "perlmutter", "polaris"]


class Center:
    """The verification stand-in: passes on a good night; on a bad one, fails with NCCL's error
    until the script exports NCCL_DEBUG=INFO (the debug agent's known fix)."""

    def __init__(self):
        self.good, self.runs = True, []

    def __call__(self, backend, *, cluster, path, script, miniapp, commit, committed, env):
        self.runs.append((cluster, committed))
        ok = self.good or "export NCCL_DEBUG=INFO" in script
        return run_result(ok, "" if ok else NCCL_LOG, f"https://ci.example/{cluster}/{len(self.runs)}",
                          "job COMPLETED" if ok else "job FAILED (exit 1)")


@contextlib.contextmanager
def tree_of(fake, ref):
    """The fake's files at a branch or commit, as a checkout."""
    with tempfile.TemporaryDirectory(prefix="fake-checkout-") as scratch:
        for path, text in fake.files_at(f"heads/{ref}" if f"heads/{ref}" in fake.refs else ref).items():
            (Path(scratch) / path).parent.mkdir(parents=True, exist_ok=True)
            (Path(scratch) / path).write_text(text)
        yield Path(scratch)


def merge(fake, pull):
    """What GitHub's merge button does: a merge commit of the PR's head on the base, the PR closed as merged."""
    head = fake.refs[f"heads/{pull['head']}"]
    merged = fake.commit_files(fake.files_at(head), [fake.refs[f"heads/{pull['base']}"], head], f"Merge #{pull['number']}")
    fake.refs[f"heads/{pull['base']}"] = merged
    pull.update(state="closed", merged=True, merge_commit_sha=merged)
    return merged


def bot_run(fake, monkeypatch, tmp_path, center, event, payload):
    """`maple action` for one event: the workspace is main's checkout, the config read from it."""
    action_env(monkeypatch, fake, tmp_path, payload, event)
    with tree_of(fake, "main") as workspace:
        return run_configured(workspace, KNOWN, lambda config: Pipeline(
            config, lambda ref: tree_of(fake, ref), env={}, backend=center), pace=False)


def push_payload(webhook, fake, before, changed):
    payload = webhook("push")
    payload.update(ref="refs/heads/main", before=before, after=fake.refs["heads/main"], deleted=False,
                   commits=[{"added": [], "modified": changed, "removed": []}], head_commit=None)
    payload["repository"]["default_branch"] = "main"
    return payload


def port_url(pull):
    return f"http://github.test/octo/ports/pull/{pull['number']}"


NIGHT = {"repository": {"default_branch": "main"}, "schedule": "17 3 * * *"}


def dashboard(fake):
    [issue] = [i for i in fake.issues if i["title"] == "Portability report"]
    return issue


@pytest.fixture
def fresh(fake):
    """A repository with one PBS launch script (written for Polaris) and maple-ci's workflows as
    `maple init` writes them, nothing else."""
    files = {"jobs/train.pbs": EXAMPLE.read_text(), **workflows(["jobs/*.pbs"])}
    fake.refs["heads/main"] = fake.commit_files(files, [fake.refs["heads/main"]], "install maple-ci's workflows")
    return fake


def test_walkthrough_from_a_fresh_repository_to_a_recovered_nightly(fresh, webhook, monkeypatch, tmp_path):
    fake, center = fresh, Center()
    monkeypatch.setenv("MAPLE_BACKEND", "slurm")  # the action's `backend` input: verify every target
    installed = fake.files_at("heads/main")
    assert "actions/create-github-app-token@" in installed[".github/workflows/maple-push.yml"]
    assert '"jobs/*.pbs", ".github/maple.yml"' in installed[".github/workflows/maple-push.yml"]

    # 1. No configuration: the first nightly run opens the onboarding PR, and only that.
    assert bot_run(fake, monkeypatch, tmp_path, center, "schedule", NIGHT) == 0
    [onboarding] = fake.pulls
    assert (onboarding["title"], onboarding["head"], onboarding["base"]) == (TITLE, "maple/port-configure", "main")
    assert "`jobs/train.pbs`, written for polaris" in onboarding["body"] and "merging it turns maple-ci on" in onboarding["body"]
    config = fake.files_at("heads/maple/port-configure")[".github/maple.yml"]
    assert 'targets: ["perlmutter", "frontier", "aurora"]' in config and 'sources: ["jobs/*.pbs"]' in config
    assert fake.issues == [] and center.runs == []
    bot_run(fake, monkeypatch, tmp_path, center, "schedule", NIGHT)
    assert len(fake.pulls) == 1 and fake.refs["heads/maple/port-configure"] == onboarding["head_sha"]  # asked again: unchanged

    # 2. The maintainer merges it; the push of .github/maple.yml ports every tracked script.
    before = fake.refs["heads/main"]
    merge(fake, onboarding)
    assert bot_run(fake, monkeypatch, tmp_path, center, "push", push_payload(webhook, fake, before, [".github/maple.yml"])) == 0
    [port] = [p for p in fake.pulls if p["head"] == "maple/port-branch-main"]
    ported = fake.files_at("heads/maple/port-branch-main")
    assert {"scripts/perlmutter/train.sbatch", "scripts/aurora/train.pbs"} <= set(ported)
    board = dashboard(fake)
    assert "| `jobs/train.pbs` | perlmutter | not yet |" in board["body"]  # nothing verified on main yet
    assert "<!-- maple: port aurora --from jobs/train.pbs -->" in board["body"]
    assert f"**Open maple-ci PRs**: [#{port['number']}]({port_url(port)}) maple: port jobs/train.pbs to" in board["body"]

    # 3. A contributor's PR adds a script; a maintainer asks for a port in a comment.
    fake.refs["heads/feature"] = fake.commit_files({"jobs/eval.pbs": EXAMPLE.read_text()}, [fake.refs["heads/main"]], "eval")
    fake.permissions["Codertocat"] = "write"
    source = fake.open_pull("feature", "main")
    drawn = board["body"]
    bot_run(fake, monkeypatch, tmp_path, center, "issue_comment", comment_payload(webhook, source["number"], "/maple port perlmutter"))
    assert fake.comments[-1]["body"].startswith("Ported in http://github.test/octo/ports/pull/")
    assert "scripts/perlmutter/eval.sbatch" in fake.files_at(f"heads/maple/port-pr-{source['number']}")
    assert board["body"] == drawn  # a PR's own port is not the default branch's: the dashboard is unchanged

    # 4. The ports are merged; a bad night: the rows fail, the passing fix is proposed, one issue.
    merge(fake, port)
    center.good = False
    bot_run(fake, monkeypatch, tmp_path, center, "schedule", NIGHT)
    rows, _ = read_rows(board["body"])
    perlmutter = rows[row_key("jobs/train.pbs", "perlmutter")]
    assert perlmutter["status"] == "failure" and perlmutter["since"].endswith(fake.refs["heads/main"][:12])
    [fix] = [p for p in fake.pulls if p["head"] == "maple/port-fix-perlmutter"]
    assert perlmutter["fix"].endswith(f"/pull/{fix['number']}") and "<!-- maple: verify perlmutter -->" in board["body"]
    assert len(fake.issues) == 1

    # The maintainer ticks "retry" on the dashboard: verified again, still failing since the same night.
    runs = len(center.runs)
    bot_run(fake, monkeypatch, tmp_path, center, "issues", edited(webhook, board, "verify perlmutter"))
    assert len(center.runs) > runs and "- [x]" not in board["body"] and fake.comments[-1]["issue"] == board["number"]
    assert read_rows(board["body"])[0][row_key("jobs/train.pbs", "perlmutter")]["since"] == perlmutter["since"]

    # 5. The next night is green: the rows pass, the fix PR closes itself, the issue stays.
    center.good = True
    bot_run(fake, monkeypatch, tmp_path, center, "schedule", NIGHT)
    rows, _ = read_rows(board["body"])
    assert rows[row_key("jobs/train.pbs", "perlmutter")]["status"] == "success" and fix["state"] == "closed"
    assert "❌" not in board["body"] and board["state"] == "open" and len(fake.issues) == 1


def test_a_closed_onboarding_pr_is_not_opened_again(fresh, webhook, monkeypatch, tmp_path, capsys):
    center = Center()
    other = push_payload(webhook, fresh, fresh.refs["heads/main"], ["jobs/train.pbs"])
    other["ref"] = "refs/heads/feature"
    bot_run(fresh, monkeypatch, tmp_path, center, "push", other)
    assert fresh.pulls == []  # another branch's push is no run of the bot's: nothing is opened
    bot_run(fresh, monkeypatch, tmp_path, center, "schedule", NIGHT)
    [onboarding] = fresh.pulls
    onboarding["state"] = "closed"  # declined
    bot_run(fresh, monkeypatch, tmp_path, center, "schedule", NIGHT)
    assert fresh.pulls == [onboarding] and "maple-ci stays off" in capsys.readouterr().out


def test_the_open_pr_limit_holds_back_push_and_nightly_but_not_a_person(fresh, webhook, monkeypatch, tmp_path):
    config = 'targets: ["perlmutter"]\nsources: ["jobs/*.pbs"]\npull_requests: {limit: 1}\n'
    fresh.refs["heads/main"] = fresh.commit_files({".github/maple.yml": config}, [fresh.refs["heads/main"]], "config")
    fresh.refs["heads/other"] = fresh.commit_files({"x": "y"}, [fresh.refs["heads/main"]], "x")
    fresh.refs["heads/maple/port-pr-9"] = fresh.refs["heads/other"]
    held = fresh.open_pull("maple/port-pr-9", "main", "an open maple-ci PR")  # the limit: reached
    before = fresh.refs["heads/main"]
    fresh.refs["heads/main"] = fresh.commit_files({"jobs/train.pbs": EXAMPLE.read_text() + "\n"}, [before], "edit")
    bot_run(fresh, monkeypatch, tmp_path, Center(), "push", push_payload(webhook, fresh, before, ["jobs/train.pbs"]))
    assert "heads/maple/port-branch-main" not in fresh.refs
    assert "**Held back**: 1 maple-ci PRs are open, the limit (`pull_requests.limit`)" in dashboard(fresh)["body"]
    assert f"**Open maple-ci PRs**: [#{held['number']}]({port_url(held)}) an open maple-ci PR" in dashboard(fresh)["body"]

    fresh.permissions["Codertocat"] = "write"
    source = fresh.open_pull("other", "main")
    bot_run(fresh, monkeypatch, tmp_path, Center(), "issue_comment", comment_payload(webhook, source["number"], "/maple port perlmutter --from jobs/train.pbs"))
    assert fresh.comments[-1]["body"].startswith("Ported in")  # a person's request is answered whatever the limit
