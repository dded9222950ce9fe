"""Issue 10 against the fake GitHub: a fork's port runs nowhere until a maintainer approves its
commit; the bot reads only regular files inside the checkout; every failure is answered; the PR
head is pinned; untrusted text stays inert in Markdown and in the Actions log."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from contextlib import nullcontext

import pytest
import yaml
from scenarios import KNOWN, SCRIPT, cluster_result, comment_payload, comment_plan, port_results, run_result, workflow_commands
from test_github_action import action_env
from test_github_end_to_end import EXAMPLE, Cluster

from maple_ci.errors import MapleError
from maple_ci.github.action import run_action
from maple_ci.github.bot import run_plan
from maple_ci.github.authorization import refusal
from maple_ci.github.commands import BotCommand, CommandError, parse_comment
from maple_ci.github.config import Config
from maple_ci.github.body import render_pr_body
from maple_ci.github.events import plan_event
from maple_ci.github.pipeline import Pipeline

FORK = "someone/ports"


def materialize(fake, ref, root):
    """The repository at `ref` (a commit or a branch) as files under `root`, as a checkout holds it."""
    sha = fake.refs.get(f"heads/{ref}", ref)
    tree = fake.trees[fake.commits[sha]["tree"]]
    target = root / sha
    for path, entry in tree.items():
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_text(fake.blobs[entry["sha"]])
    return target


class Passing(Cluster):
    """A backend stand-in where every run passes; `runs` records each call."""

    def __call__(self, backend, **run):
        super().__call__(backend, **run)
        return run_result(True, "", f"https://ci.example/{len(self.runs)}", "job COMPLETED")


def fork_pr(fake):
    fake.refs["heads/feature"] = fake.commit_files({"jobs/train.sbatch": EXAMPLE.read_text()}, [fake.refs["heads/main"]], "add")
    fake.permissions["Codertocat"] = "write"
    pull = fake.open_pull("feature", "main")
    pull["head_repo"] = fake.repo_json() | {"full_name": FORK, "owner": {"login": "someone", "type": "User"},
                                            "pushed_at": "2019-05-15T15:00:00Z"}  # before the recorded comments
    return pull


def test_a_fork_derived_port_is_verified_only_after_a_maintainer_approves_its_commit(fake, webhook, tmp_path, monkeypatch):
    pull = fork_pr(fake)
    head = fake.refs["heads/feature"]
    cluster = Passing()
    config = Config(targets=["perlmutter"], verification={"default": "slurm"})
    pipeline = Pipeline(config, lambda ref: nullcontext(materialize(fake, ref, tmp_path)), env={}, backend=cluster)

    def comment(number, body, login="Codertocat", association="OWNER"):
        payload = comment_payload(webhook, number, body)
        payload["comment"]["user"]["login"] = login
        payload["comment"]["author_association"] = association
        action_env(monkeypatch, fake, tmp_path, payload)
        return run_action(pipeline.port, KNOWN, config.sources, config.targets, pace=False, verify=pipeline.verify)

    def nightly():
        action_env(monkeypatch, fake, tmp_path, {"repository": {"default_branch": "main"}}, event="schedule")
        return run_action(pipeline.port, KNOWN, config.sources, config.targets, pace=False, verify=pipeline.verify)

    # 1. `/maple port` on the fork's PR: a PR into main whose commit and files name the fork's commit; nothing runs.
    comment(pull["number"], "/maple port perlmutter")
    bot_pr = fake.pulls[-1]
    branch = fake.refs["heads/maple/port-pr-1"]
    message = fake.commits[branch]["message"]
    assert f"Maple-Source-Repository: {FORK}\nMaple-Source-Commit: {head}\n" in message
    assert "Maple-Request: https://github.com/Codertocat/Hello-World/issues/1#issuecomment-492700400" in message
    ported = fake.files_at("heads/maple/port-pr-1")["scripts/perlmutter/train.sbatch"]
    assert ported.endswith(f"# Maple-Source-Repository: {FORK}\n# Maple-Source-Commit: {head}\n")
    assert f"Ported from `{FORK}` at `{head}`" in bot_pr["body"]
    assert cluster.runs == [] and [r["conclusion"] for r in fake.check_runs] == ["neutral"]
    assert f"`/maple approve {head}`" in fake.comments[-1]["body"]

    # 2. `/maple verify` on the bot's (same-repository) PR, and the nightly run once it is merged: nothing runs.
    comment(bot_pr["number"], "/maple verify")
    fake.refs["heads/main"] = branch  # merged
    nightly()
    assert cluster.runs == [] and {r["conclusion"] for r in fake.check_runs} == {"neutral"}
    assert "waits for a maintainer's approval" in fake.comments[-1]["body"]
    assert "waits for a maintainer's approval" in fake.check_runs[-1]["output"]["summary"]

    # 3. An approval from someone without write access is refused and recorded nowhere.
    fake.permissions["mallory"] = "read"
    comment(bot_pr["number"], f"/maple approve {head}", login="mallory", association="MEMBER")
    comment(bot_pr["number"], f"/maple approve {head}", login="outsider", association="CONTRIBUTOR")
    assert fake.statuses == [] and all(c["body"].startswith(("Sorry @mallory", "Sorry @outsider")) for c in fake.comments[-2:])

    # 4. A maintainer approves the fork's commit: a status on it; now verification runs, nightly too.
    comment(bot_pr["number"], f"/maple approve {head}")
    assert [(s["sha"], s["context"], s["description"]) for s in fake.statuses] == [(head, "maple-ci/approval", "approved by @Codertocat")]
    comment(bot_pr["number"], "/maple verify")
    assert [(r["cluster"], r["commit"], r["script"]) for r in cluster.runs] == [("perlmutter", branch, ported)]
    nightly()
    assert len(cluster.runs) == 2

    # 5. The approver loses write access: the approval no longer counts.
    fake.permissions["Codertocat"] = "read"
    nightly()
    assert len(cluster.runs) == 2


def test_a_status_forged_with_another_context_or_approver_is_not_an_approval(fake, repo, webhook):
    from maple_ci.github.approval import approver

    sha = fake.refs["heads/main"]
    fake.statuses += [{"id": 1, "sha": sha, "state": "success", "context": "ci/other", "description": "approved by @Codertocat"},
                      {"id": 2, "sha": sha, "state": "success", "context": "maple-ci/approval", "description": "approved by @nobody"}]
    fake.permissions["Codertocat"] = "admin"
    assert approver(repo, sha) is None


@pytest.mark.parametrize("target", ["home/.bashrc", "/proc/self/environ"])
def test_verify_refuses_a_ported_script_that_is_a_symlink_and_posts_nothing_from_it(fake, repo, source_pr, webhook, tmp_path, target):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("#!/bin/bash\nexport GITHUB_TOKEN=ghs_leaked\nsrun python train.py\n")
    root = tmp_path / "checkout"
    (root / "scripts" / "perlmutter").mkdir(parents=True)
    (root / "scripts" / "perlmutter" / "train.sbatch").symlink_to(tmp_path / target if not target.startswith("/") else target)
    cluster = Cluster()
    pipeline = Pipeline(Config(verification={"default": "slurm"}), lambda ref: nullcontext(root), env={}, backend=cluster)
    plan, _ = comment_plan(webhook, source_pr["number"], "/maple verify")

    with pytest.raises(MapleError, match="reached through a symlink"):
        run_plan(repo, plan, pipeline.port, pipeline.verify)
    [reply] = fake.comments
    assert "scripts/perlmutter/train.sbatch is outside the repository or reached through a symlink" in reply["body"]
    assert "ghs_leaked" not in json.dumps(fake.requests) and cluster.runs == []
    assert [r["content"] for r in fake.reactions] == ["eyes", "confused"]


def test_from_through_a_symlinked_folder_is_refused(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "train.sh").write_text(SCRIPT)
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "jobs").symlink_to(tmp_path / "outside")
    pipeline = Pipeline(Config(), lambda ref: nullcontext(tmp_path / "repo"), env={})
    with pytest.raises(MapleError, match="jobs/train.sh is outside the repository or reached through a symlink"):
        pipeline.port(BotCommand("port", ("aurora",), source="jobs/train.sh"), (), "c0")


# --- finding 8: every failure is answered, with the run's log ---

@pytest.fixture
def run_env(monkeypatch):
    for name, value in {"GITHUB_SERVER_URL": "https://github.test", "GITHUB_REPOSITORY": "octo/ports", "GITHUB_RUN_ID": "77"}.items():
        monkeypatch.setenv(name, value)
    return "https://github.test/octo/ports/actions/runs/77"


def test_a_title_of_many_scripts_is_cut_to_githubs_limit(fake, repo, source_pr, webhook):
    many = [{**port_results()[0], "source": f"jobs/a-rather-long-launch-script-name-{i:02}.sbatch"} for i in range(40)]
    for i, result in enumerate(many):
        result["clusters"] = [cluster_result("aurora") | {"path": f"scripts/aurora/s{i}.sh", "suggestions": []}]
    plan, _ = comment_plan(webhook, source_pr["number"], "/maple port aurora")
    run_plan(repo, plan, lambda *args: many)
    pr = fake.pulls[-1]
    assert len(pr["title"]) == 256 and pr["title"].endswith("… to aurora") and "\n" not in pr["title"]


def test_a_persistent_5xx_is_answered_with_the_run_and_leaves_no_branch(fake, repo, source_pr, webhook, run_env):
    fake.fail_routes[r"POST /pulls"] = 502
    plan, _ = comment_plan(webhook, source_pr["number"], "/maple port aurora")
    with pytest.raises(MapleError, match="kept failing after retries"):
        run_plan(repo, plan, lambda *args: port_results())
    assert "heads/maple/port-pr-1" not in fake.refs and len(fake.pulls) == 1  # the branch made for it is gone
    assert [r["content"] for r in fake.reactions] == ["eyes", "confused"]
    assert "kept failing after retries" in fake.comments[-1]["body"] and fake.comments[-1]["body"].endswith(f"Log: {run_env}")


def test_a_deleted_head_branch_is_a_clear_reply(fake, repo, source_pr, webhook, run_env):
    del fake.refs["heads/feature"]
    plan, _ = comment_plan(webhook, source_pr["number"], "/maple port aurora")
    with pytest.raises(MapleError, match="does not exist any more"):
        run_plan(repo, plan, lambda *args: port_results())
    assert "Branch `feature` does not exist any more" in fake.comments[-1]["body"]
    assert not any(ref.startswith("heads/maple/") for ref in fake.refs)


def test_a_too_long_from_is_an_invalid_command(fake, repo, source_pr, webhook):
    plan, _ = comment_plan(webhook, source_pr["number"], "/maple port aurora --from " + "a/" * 3000 + "x.sh")
    assert plan.exit_code == 2
    run_plan(repo, plan, lambda *args: pytest.fail("nothing may run"))
    [reply] = fake.comments
    assert "at most 1024 characters" in reply["body"] and len(reply["body"]) < 2000


def test_an_unexpected_error_is_answered_and_its_traceback_cannot_issue_workflow_commands(fake, repo, source_pr, webhook,
                                                                                         run_env, capsys):
    def port(*args):
        raise MemoryError("file name\n::error::injected")

    plan, _ = comment_plan(webhook, source_pr["number"], "/maple port aurora")
    with pytest.raises(MapleError, match="unexpected MemoryError") as error:
        run_plan(repo, plan, port)
    assert "\n" not in str(error.value)
    assert "an unexpected MemoryError" in fake.comments[-1]["body"] and run_env in fake.comments[-1]["body"]
    assert [r["content"] for r in fake.reactions] == ["eyes", "confused"]
    log = capsys.readouterr().out
    stop = next(c for c in workflow_commands(log) if c[0] == "stop-commands")
    assert log.index("::error::injected") > log.index(f"::stop-commands::{stop[2]}") and f"::{stop[2]}::" in log


# --- finding 9: the PR head is pinned ---

def test_a_fork_pushed_after_the_comment_is_not_ported_whatever_its_committer_date(fake, repo, webhook):
    # The fork commits with a date before the comment (2011, the fake's default) but pushes after it:
    # the committer date is the fork's to set, the push time is GitHub's.
    pull = fork_pr(fake)
    head = fake.refs["heads/feature"]
    pull["head_repo"]["pushed_at"] = "2019-05-15T15:25:00Z"  # the comment is from 15:20:21
    plan, _ = comment_plan(webhook, pull["number"], "/maple port aurora")
    with pytest.raises(MapleError, match="pushed after this request"):
        run_plan(repo, plan, lambda *args: pytest.fail("nothing may be ported"))
    assert f"`@{head}`" in fake.comments[-1]["body"] and len(fake.pulls) == 1

    with pytest.raises(MapleError, match="not `012345678901`"):
        run_plan(repo, comment_plan(webhook, pull["number"], "/maple port aurora @012345678901")[0], lambda *a: pytest.fail())
    ported = []
    pinned, _ = comment_plan(webhook, pull["number"], f"/maple port aurora @{head[:12]}")
    run_plan(repo, pinned, lambda command, sources, ref: ported.append(ref) or port_results())
    assert ported == [head] and f"Maple-Source-Commit: {head}" in fake.commits[fake.refs["heads/maple/port-pr-1"]]["message"]

    # Pushed before the comment, with a committer date after it: the head is what was seen.
    fake.refs["heads/feature"] = fake.commit_files({"jobs/train.sh": SCRIPT + "# later\n"}, [head], "dated later",
                                                   date="2030-01-01T00:00:00Z")
    pull["head_repo"]["pushed_at"] = "2019-05-15T15:00:00Z"
    run_plan(repo, comment_plan(webhook, pull["number"], "/maple port aurora")[0],
             lambda command, sources, ref: ported.append(ref) or port_results())
    assert ported[-1] == fake.refs["heads/feature"]


@pytest.mark.parametrize("pin", ["@0123456", "@0123456789a"])
def test_a_pin_shorter_than_12_hex_digits_is_an_invalid_command(pin):
    # 7 hex digits are 28 bits: a fork can grind a commit whose id starts like the reviewed one.
    with pytest.raises(CommandError, match="12 to 40 lowercase hex digits"):
        parse_comment(f"/maple port aurora {pin}", KNOWN)


@pytest.mark.parametrize("creator", ["mallory", "other-ci[bot]"])
def test_an_approval_status_written_by_anyone_but_the_bot_is_not_an_approval(fake, repo, creator):
    # Any app or workflow with `statuses: write` (or a collaborator's token) can write this status.
    from maple_ci.github.approval import approver

    sha = fake.refs["heads/main"]
    fake.permissions["Codertocat"] = "admin"
    fake.token_login = creator
    repo.get_commit(sha).create_status(state="success", context="maple-ci/approval", description="approved by @Codertocat")
    assert approver(repo, sha) is None
    fake.token_login = "github-actions[bot]"  # the same status from the bot's own token counts
    repo.get_commit(sha).create_status(state="success", context="maple-ci/approval", description="approved by @Codertocat")
    assert approver(repo, sha) == "Codertocat"


# --- finding 11: untrusted text is inert ---

def test_untrusted_names_and_values_render_as_text():
    evil = "jobs/@octocat [x](https://evil.test) ![i](https://evil.test/i.png) <img src=x> `tick`.sh"
    results = port_results()
    results[0]["source"] = evil
    results[0]["intent"]["script_args"] = ["--x", "@admin", "<script>", "``"]
    results[0]["clusters"][0]["note"] = "failed: see @admin at https://evil.test <b>now</b> [x](y)"
    for c in results[0]["clusters"]:
        c["log_url"] = None  # the bot's own links to logs are the only links a body has
    body = render_pr_body(results)
    # Names and values are code spans (GitHub renders nothing inside), fenced past their own backticks...
    assert f"### ``{evil}``" in body and "| script_args | ``` --x @admin <script> `` ``` |" in body
    # ...and prose is escaped text: no mention, autolink, HTML or link.
    assert "failed: see @\u200badmin at https:\u200b//evil.test &lt;b&gt;now&lt;/b&gt; \\[x\\]\\(y\\)" in body
    outside_code = re.sub(r"(`+).+?(?<!`)\1(?!`)", "", body)
    for active in ("@octocat", "@admin", "](", "<img", "<script>", "<b>", "https://"):
        assert active not in outside_code, active


def test_file_names_cannot_inject_workflow_commands(fake, repo, webhook, capsys):
    name = "jobs/x.sh\n::error title=pwned::injected\n::set-output name=pr-url::evil"
    payload = webhook("push")
    payload.update(ref="refs/heads/main", deleted=False)
    payload["repository"]["default_branch"] = "main"
    payload["commits"] = [{"added": [name], "modified": [], "removed": []}]
    plan = plan_event("push", payload, KNOWN, tracked=("jobs/*",), targets=("aurora",))
    results = port_results()
    results[0]["clusters"][0]["checks"][0].update(ok=False, line=1, message="bad\n::error::again")
    results[0]["clusters"][0]["path"] = name
    with pytest.raises(Exception):  # the fake has no such payload commit; only the log matters here
        run_plan(repo, plan, lambda *args: results)
    commands = workflow_commands(capsys.readouterr().out)
    assert not any("pwned" in str(c) or c[0] == "set-output" or c[2] in ("injected", "again") for c in commands)


def test_two_requests_on_one_pr_leave_a_body_describing_both(fake, repo, source_pr, webhook):
    def only(cluster):
        results = port_results()
        results[0]["clusters"] = [c | {"suggestions": []} for c in results[0]["clusters"] if c["cluster"] == cluster]
        return lambda *args: results

    run_plan(repo, comment_plan(webhook, source_pr["number"], "/maple port perlmutter")[0], only("perlmutter"))
    run_plan(repo, comment_plan(webhook, source_pr["number"], "/maple port aurora")[0], only("aurora"))
    [_, pr] = fake.pulls
    assert "| perlmutter | `scripts/perlmutter/train.sh` |" in pr["body"] and "| aurora | `scripts/aurora/train.sh` |" in pr["body"]
    assert pr["title"] == "maple: port jobs/train.sh to perlmutter, aurora"
    # A damaged state (anyone with write access can edit the body) is ignored, not a crash.
    pr["body"] = "<!-- maple-ci results !!! -->"
    run_plan(repo, comment_plan(webhook, source_pr["number"], "/maple port perlmutter --nodes 3")[0], only("perlmutter"))


# --- issue 9 item 8: every JobIntent option `maple port` has, in a comment too ---

def test_comment_options_reach_the_port_like_the_cli_options(tmp_path):
    command = parse_comment("/maple port perlmutter --entrypoint tools/train.py --gpus-per-node 2 --account m9999 "
                            "--queue debug --walltime 00:30:00 --nodes 3", KNOWN)
    root = tmp_path / "repo"
    (root / "jobs").mkdir(parents=True)
    shutil.copy(EXAMPLE, root / "jobs" / "train.sbatch")
    [result] = Pipeline(Config(), lambda ref: nullcontext(root), env={}).port(
        BotCommand(**{**command.__dict__, "source": "jobs/train.sbatch"}), (), "c0")
    intent = result["intent"]
    assert (intent["entrypoint"], intent["gpus_per_node"], intent["account"], intent["queue"], intent["walltime"],
            intent["world_size"]) == ("tools/train.py", 2, "m9999", "debug", "00:30:00", 6)
    script = result["clusters"][0]["content"]
    assert "m9999" in script and "00:30:00" in script and "tools/train.py" in script


@pytest.mark.parametrize("option", ["--walltime 1:00", "--walltime 01:99:00", "--account m1;rm", "--queue $(id)",
                                    "--entrypoint ../x.py", "--entrypoint -m", "--gpus-per-node 65", "--account " + "a" * 65])
def test_comment_options_are_validated(option):
    with pytest.raises(CommandError):
        parse_comment(f"/maple port perlmutter {option}", KNOWN)


# --- issue 15: a read-only commenter cannot take a maintainer's place in the queue ---

COMMENT_WORKFLOW = Path(__file__).resolve().parents[2] / "workflows" / "github" / "maple-comment.yml"


@pytest.mark.parametrize("permission, joins", [("read", False), ("none", False), ("write", True), ("admin", True)])
def test_only_a_commenter_with_write_access_joins_the_queue(fake, tmp_path, permission, joins):
    # The comment workflow's `authorize` step, run as Actions runs it, against the fake's permission
    # endpoint: a MEMBER with read access (the `if` lets members through) must not reach the
    # `maple` job, whose concurrency group keeps only the newest waiting request.
    [step] = yaml.safe_load(COMMENT_WORKFLOW.read_text())["jobs"]["authorize"]["steps"]
    fake.permissions["member"] = permission
    output = tmp_path / "output"
    env = {"PATH": os.environ["PATH"], "API_URL": fake.base_url, "REPOSITORY": f"{fake.owner}/{fake.name}",
           "COMMENTER": "member", "GH_TOKEN": "ghs_x", "GITHUB_OUTPUT": str(output)}
    subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], env=env, check=True, timeout=60)
    assert (output.exists() and "write=true" in output.read_text()) == joins


@pytest.mark.parametrize("body, replied", [("/maple port aurora", True), ("LGTM, thanks\n\n  /maple verify", True),
                                           ("we could try /maple later", False)])
def test_a_commenter_without_write_access_gets_the_refusal_from_the_shipped_workflow(fake, body, replied):
    # Issue 28: the `refuse` job's step, run as Actions runs it, against the fake's comment endpoint:
    # the reply is maple-ci's own refusal, for a comment with a /maple command line only.
    [step] = yaml.safe_load(COMMENT_WORKFLOW.read_text())["jobs"]["refuse"]["steps"]
    env = {"PATH": os.environ["PATH"], "API_URL": fake.base_url, "REPOSITORY": f"{fake.owner}/{fake.name}",
           "ISSUE": "7", "COMMENTER": "reader", "BODY": body, "GH_TOKEN": "ghs_x"}
    subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], env=env, check=True, timeout=60)
    assert fake.comments == ([{"issue": 7, "body": refusal("reader")}] if replied else [])


# --- issue 15: merging a fork's PR is not approving its code for the center ---

def test_a_merged_fork_script_ported_on_push_is_verified_only_after_approval(fake, webhook, tmp_path, monkeypatch):
    pull = fork_pr(fake)
    head = fake.refs["heads/feature"]
    merge = fake.commit_files({"jobs/train.sbatch": EXAMPLE.read_text()}, [fake.refs["heads/main"], head], "Merge #1")
    fake.refs["heads/main"] = merge
    pull.update(merged=True, state="closed", merge_commit_sha=merge)
    cluster = Passing()
    config = Config(targets=["perlmutter"], sources=["jobs/*.sbatch"], verification={"default": "slurm"})
    pipeline = Pipeline(config, lambda ref: nullcontext(materialize(fake, ref, tmp_path)), env={}, backend=cluster)

    def push():
        payload = webhook("push")
        payload.update(ref="refs/heads/main", deleted=False, after=merge, head_commit={"url": "http://github.test/push"},
                       commits=[{"added": ["jobs/train.sbatch"], "modified": [], "removed": []}])
        payload["repository"]["default_branch"] = "main"
        action_env(monkeypatch, fake, tmp_path, payload, event="push")
        return run_action(pipeline.port, KNOWN, config.sources, config.targets, pace=False, verify=pipeline.verify)

    push()
    ported = fake.files_at("heads/maple/port-branch-main")["scripts/perlmutter/train.sbatch"]
    assert ported.endswith(f"# Maple-Source-Repository: {FORK}\n# Maple-Source-Commit: {head}\n")  # nightly reads it too
    assert cluster.runs == [] and "waits for a maintainer's approval" in fake.check_runs[-1]["output"]["summary"]

    # The bot's PR is merged; the nightly run verifies nothing until a maintainer approves the fork's head.
    fake.refs["heads/main"] = fake.refs["heads/maple/port-branch-main"]
    action_env(monkeypatch, fake, tmp_path, {"repository": {"default_branch": "main"}}, event="schedule")
    run_action(pipeline.port, KNOWN, config.sources, config.targets, pace=False, verify=pipeline.verify)
    assert cluster.runs == []
    fake.permissions["Codertocat"] = "write"
    fake.create_status({"state": "success", "context": "maple-ci/approval", "description": "approved by @Codertocat"},
                       {}, head)  # what `/maple approve` writes, from the bot's token
    run_action(pipeline.port, KNOWN, config.sources, config.targets, pace=False, verify=pipeline.verify)
    assert len(cluster.runs) == 1


def test_porting_a_forks_port_again_keeps_its_stamp(fake, webhook, tmp_path, monkeypatch):
    # Laundering: the bot's stamped port of a fork's script is on main; a maintainer ports that
    # port (a same-repository file now) to another cluster. The new port keeps the fork's stamp.
    fork = "f" * 40
    stamped_port = EXAMPLE.read_text() + f"\n# Maple-Source-Repository: {FORK}\n# Maple-Source-Commit: {fork}\n"
    fake.refs["heads/main"] = fake.commit_files({"scripts/perlmutter/train.sbatch": stamped_port},
                                                [fake.refs["heads/main"]], "Merge the bot's PR")
    fake.permissions["Codertocat"] = "write"
    cluster = Passing()
    config = Config(targets=["perlmutter"], verification={"default": "slurm"})
    pipeline = Pipeline(config, lambda ref: nullcontext(materialize(fake, ref, tmp_path)), env={}, backend=cluster)
    payload = webhook("issue_comment", action="created")
    payload["comment"]["body"] = "/maple port polaris --from scripts/perlmutter/train.sbatch"
    payload["issue"].pop("pull_request", None)
    payload["repository"]["default_branch"] = "main"
    action_env(monkeypatch, fake, tmp_path, payload)
    run_action(pipeline.port, KNOWN, config.sources, config.targets, pace=False, verify=pipeline.verify)
    [ported] = [text for path, text in fake.files_at(next(r for r in fake.refs if r.startswith("heads/maple/"))).items()
                if path.startswith("scripts/polaris/")]
    assert ported.endswith(f"# Maple-Source-Repository: {FORK}\n# Maple-Source-Commit: {fork}\n")
    assert cluster.runs == [] and f"/maple approve {fork}" in fake.comments[-1]["body"]
