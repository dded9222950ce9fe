"""Issue 19: the bot as maintainers expect from Dependabot and Renovate, driven against the fake
GitHub (a stand-in for github.com) from GitHub's recorded webhook payloads (@octokit/webhooks-examples).
One test per finding: a maintainer's commit survives a push, a fix that passed lands, no duplicate
review, a closed PR stays closed, `/maple ignore`, the footer and the reply, errors that say what to
type, the settings."""

import re
from contextlib import nullcontext
from pathlib import Path

import pytest
from scenarios import KNOWN, SCRIPT, cluster_result, comment_plan, run_result

from maple_ci.errors import MapleError
from maple_ci.github.bot import run_plan
from maple_ci.github.commands import BotCommand, CommandError, parse_comment
from maple_ci.github.config import Config, load_config
from maple_ci.github.events import plan_event
from maple_ci.github.pipeline import Pipeline

TRACKED = ("jobs/*.sh",)
NCCL_LOG = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1691, unhandled system error\n"


def results(version="1", clusters=("perlmutter",), suggestions=()):
    """jobs/train.sh ported to `clusters`; `version` changes every file's content."""
    found = []
    for cluster in clusters:
        c = cluster_result(cluster, suggestions=[s for s in suggestions if f"/{cluster}/" in s["path"]])
        c["content"] += f"# v{version}\n"
        found.append(c)
    return [{"source": "jobs/train.sh", "intent": {"entrypoint": "train.py"}, "clusters": found}]


def push(webhook, fake, targets=("perlmutter",)):
    """GitHub's recorded push payload, moved to a commit of main that changes jobs/train.sh."""
    payload = webhook("push", ref="refs/heads/master")
    fake.refs["heads/main"] = fake.commit_files({"jobs/train.sh": SCRIPT + f"# {len(fake.commits)}\n"},
                                                [fake.refs["heads/main"]], "edit train.sh")
    payload["repository"]["default_branch"] = "main"
    payload.update(ref="refs/heads/main", after=fake.refs["heads/main"])
    payload["commits"] = [{**payload["commits"][0], "added": [], "removed": [], "modified": ["jobs/train.sh"]}]
    return plan_event("push", payload, KNOWN, TRACKED, targets)


def bot_pulls(fake):
    return [p for p in fake.pulls if p["head"].startswith("maple/port-")]


def test_a_maintainers_commit_on_the_bot_branch_survives_a_push(fake, repo, webhook):
    run_plan(repo, push(webhook, fake), lambda *a: results("1"))
    [pr] = bot_pulls(fake)
    branch = f"heads/{pr['head']}"
    # The maintainer applies a fix on the bot's branch (GitHub's "Commit suggestion" makes such a commit).
    fake.refs[branch] = mine = fake.commit_files({"scripts/perlmutter/train.sh": "#!/bin/bash\n# fixed by hand\n"},
                                                 [fake.refs[branch]], "Apply suggestions from code review")
    run_plan(repo, push(webhook, fake), lambda *a: results("2"))
    assert fake.refs[branch] == mine  # nothing on top of it
    assert fake.files_at(branch)["scripts/perlmutter/train.sh"] == "#!/bin/bash\n# fixed by hand\n"
    assert "/maple recreate" in pr["body"] and "stopped updating" in pr["body"]
    [said] = [c for c in fake.comments if c["issue"] == pr["number"]]
    assert mine[:7] in said["body"] and "/maple recreate" in said["body"]
    run_plan(repo, push(webhook, fake), lambda *a: results("3"))  # said once, not at every push
    assert len([c for c in fake.comments if c["issue"] == pr["number"]]) == 1 and fake.refs[branch] == mine

    # `/maple recreate`, commented on the bot's PR as its banner says: the branch starts again from main.
    fake.permissions["Codertocat"] = "write"
    asked = []
    run_plan(repo, comment_plan(webhook, pr["number"], "/maple recreate")[0],
             lambda command, sources, ref: asked.append((command.clusters, sources, ref)) or results("4"))
    assert asked == [(("perlmutter",), ("jobs/train.sh",), "main")]
    assert fake.commits[fake.refs[branch]]["parents"] == [fake.refs["heads/main"]]
    assert "# v4" in fake.files_at(branch)["scripts/perlmutter/train.sh"] and "stopped updating" not in pr["body"]


def test_recreate_discards_the_other_commits_and_refreshes_again(fake, repo, webhook, source_pr):
    plan, _ = comment_plan(webhook, source_pr["number"], "/maple port perlmutter")
    run_plan(repo, plan, lambda *a: results("1"))
    branch = "heads/maple/port-pr-1"
    fake.refs[branch] = fake.commit_files({"x.txt": "mine\n"}, [fake.refs[branch]], "wip")
    run_plan(repo, comment_plan(webhook, source_pr["number"], "/maple recreate")[0], lambda *a: results("2"))
    assert fake.commits[fake.refs[branch]]["parents"] == [fake.refs["heads/feature"]]
    assert "x.txt" not in fake.files_at(branch) and "# v2" in fake.files_at(branch)["scripts/perlmutter/train.sh"]


def fix_pipeline(fixes="commit", runs=None):
    def backend(name, *, cluster, path, script, miniapp, commit, committed, env):
        ok = "NCCL_DEBUG=INFO" in script
        (runs if runs is not None else []).append((path, committed, ok))
        return run_result(ok, "" if ok else NCCL_LOG, f"https://ci.example/{cluster}", "job FAILED" if not ok else "ok")
    return Pipeline(Config(verification={"default": "slurm"}, fixes=fixes), lambda ref: nullcontext(Path(".")),
                    env={}, backend=backend)


@pytest.mark.parametrize("fixes", ["commit", "suggest"])
def test_a_fix_whose_rerun_passed_lands_as_a_commit(fake, repo, webhook, source_pr, fixes):
    pipeline = fix_pipeline(fixes, runs := [])
    plan, _ = comment_plan(webhook, source_pr["number"], "/maple port perlmutter")
    broken = "#!/bin/bash\n#SBATCH -N 1\n\nsrun python train.py\n"

    def port(*args, more=()):
        return [{"source": "jobs/train.sh", "intent": {"framework": "pytorch"}, "clusters": [
            cluster_result("perlmutter") | {"content": broken, "verification": "pending"}]}, *more]

    done = run_plan(repo, plan, port, pipeline.verify, settings=pipeline.config)
    ported = fake.files_at("heads/maple/port-pr-1")["scripts/perlmutter/train.sh"]
    if fixes == "commit":
        assert "export NCCL_DEBUG=INFO" in ported and fake.reviews == []
        head = fake.refs["heads/maple/port-pr-1"]
        assert "fix" in fake.commits[head]["message"].lower()
        assert {r["conclusion"] for r in fake.check_runs if r["head_sha"] == head} == {"success"}
        assert done.results[0]["clusters"][0]["verification"] == "passed"
        # A refresh that generates the same script (and changes another) runs it with its fix: it
        # passes at once, and no fix is made or committed again.
        passing = cluster_result("polaris") | {"verification": "pending", "content": "export NCCL_DEBUG=INFO\n"}
        other = {"source": "jobs/other.sh", "intent": {}, "clusters": [passing]}
        del runs[:]
        run_plan(repo, plan, lambda *a: port(more=[other]), pipeline.verify, settings=pipeline.config)
        assert runs == [("scripts/perlmutter/train.sh", True, True), ("scripts/polaris/train.sh", True, True)]
        after = fake.refs["heads/maple/port-pr-1"]
        assert fake.commits[after]["parents"] == [head] and "NCCL_DEBUG=INFO" in fake.files_at(after)["scripts/perlmutter/train.sh"]
    else:
        assert "NCCL_DEBUG" not in ported and len(fake.reviews) == 1


def test_the_nightly_proposes_a_passing_fix_in_a_pr_linked_from_the_report(fake, repo):
    pipeline = fix_pipeline()
    broken = "#!/bin/bash\n#SBATCH -N 1\n\nsrun python train.py\n"
    fake.refs["heads/main"] = main = fake.commit_files({"scripts/perlmutter/train.sh": broken}, [fake.refs["heads/main"]], "ports")
    plan = plan_event("schedule", {"repository": {"default_branch": "main"}}, KNOWN, targets=("perlmutter",))

    def collected(*args):
        return [{"source": "scripts/perlmutter/train.sh", "intent": {"framework": "pytorch"},
                 "clusters": [cluster_result("perlmutter") | {"content": broken, "verification": "pending"}]}]

    for night in range(2):  # the second night finds the same fix proposed: nothing new
        run_plan(repo, plan, collected, pipeline.verify, settings=pipeline.config)
    [pr] = bot_pulls(fake)
    assert (pr["head"], pr["base"]) == ("maple/port-fix-perlmutter", "main")
    head = fake.refs["heads/maple/port-fix-perlmutter"]
    assert fake.commits[head]["parents"] == [main]
    assert "export NCCL_DEBUG=INFO" in fake.files_at(head)["scripts/perlmutter/train.sh"]
    assert "[log of the failing run](https://ci.example/perlmutter)" in pr["body"]
    [issue] = fake.issues
    assert f"[fix PR](http://github.test/octo/ports/pull/{pr['number']})" in issue["body"]  # the dashboard row links it


def test_a_second_push_posts_no_duplicate_review(fake, repo, webhook):
    suggestion = [{"path": "scripts/perlmutter/train.sh", "start_line": 3, "line": 3, "body": "module load pytorch/2.3"}]
    run_plan(repo, push(webhook, fake), lambda *a: results("1", suggestions=suggestion))
    run_plan(repo, push(webhook, fake), lambda *a: results("2", suggestions=suggestion))
    assert len(fake.commits[fake.refs["heads/maple/port-branch-main"]]["parents"]) == 1
    assert len(fake.reviews) == 1


def test_closing_the_bot_pr_is_remembered(fake, repo, webhook):
    run_plan(repo, push(webhook, fake), lambda *a: results("1"))
    [pr] = bot_pulls(fake)
    pr["state"] = "closed"  # the maintainer closed it without merging
    head = fake.refs["heads/maple/port-branch-main"]
    run_plan(repo, push(webhook, fake), lambda *a: results("2"))
    assert bot_pulls(fake) == [pr] and pr["state"] == "closed" and fake.refs["heads/maple/port-branch-main"] == head
    pr["state"] = "open"  # reopened: refreshed again
    run_plan(repo, push(webhook, fake), lambda *a: results("3"))
    assert "# v3" in fake.files_at("heads/maple/port-branch-main")["scripts/perlmutter/train.sh"]
    pr["state"] = "closed"  # closed again; a person then asks by hand (a request, not the bot's own refresh)
    asked = plan_event("workflow_dispatch", {"inputs": {"command": "port perlmutter"}, "ref": "refs/heads/main"}, KNOWN)
    run_plan(repo, asked, lambda *a: results("4"))
    again = bot_pulls(fake)[-1]
    again.update(state="closed", merged=True)  # that PR merged: the next change gets a new PR
    run_plan(repo, push(webhook, fake), lambda *a: results("5"))
    assert [p["state"] for p in bot_pulls(fake)] == ["closed", "closed", "open"]


def test_ignore_and_unignore_a_cluster(fake, repo, webhook, source_pr):
    def ask(body, version):
        run_plan(repo, comment_plan(webhook, source_pr["number"], body)[0],
                 lambda command, *a: results(version, command.clusters))

    ask("/maple port perlmutter aurora", "1")
    ask("/maple ignore aurora", "x")
    assert "/maple unignore aurora" in fake.comments[-1]["body"]
    ask("/maple port perlmutter aurora", "2")
    files = fake.files_at("heads/maple/port-pr-1")
    assert "# v2" in files["scripts/perlmutter/train.sh"] and "# v1" in files["scripts/aurora/train.sh"]
    assert "aurora" in fake.comments[-1]["body"] and "ignored" in fake.comments[-1]["body"]
    ask("/maple unignore aurora", "x")
    ask("/maple port perlmutter aurora", "3")
    assert "# v3" in fake.files_at("heads/maple/port-pr-1")["scripts/aurora/train.sh"]
    ask("/maple ignore jobs/train.sh", "x")  # the PR's only script: nothing to port, not every tracked one
    with pytest.raises(MapleError):
        ask("/maple port perlmutter", "4")
    assert "Every script asked for is ignored here (`jobs/train.sh`)" in fake.comments[-1]["body"]


def test_the_bots_commit_amended_by_a_person_is_theirs(fake, repo, webhook):
    run_plan(repo, push(webhook, fake), lambda *a: results("1"))
    branch = "heads/maple/port-branch-main"
    bot = fake.commits[fake.refs[branch]]
    # `git commit --amend` keeps the author and the message; the committer is the person.
    fake.refs[branch] = mine = fake.commit_files({"scripts/perlmutter/train.sh": "mine\n"}, bot["parents"], bot["message"],
                                                 author="maple-ci")
    run_plan(repo, push(webhook, fake), lambda *a: results("2"))
    assert fake.refs[branch] == mine


def test_the_pr_explains_itself_and_keeps_its_state_small(fake, repo, webhook, source_pr):
    plan, _ = comment_plan(webhook, source_pr["number"], "/maple port perlmutter aurora")
    big = results("1", ("perlmutter", "aurora"))
    for c in big[0]["clusters"]:
        c["content"] += "# filler\n" * 500
        c["checks"] += [{"name": f"check-{i}", "ok": True, "message": "fine " * 10} for i in range(30)]
    run_plan(repo, plan, lambda *a: big)
    [pr] = bot_pulls(fake)
    body = pr["body"]
    for said in ("/maple verify", "/maple help", "/maple recreate", "/maple ignore", "push", "nightly", "close"):
        assert said in body
    assert re.search(r"requested in \[[^\]]+\]\(https://github\.com/[^)]+\)", body)  # a link, not a code span
    hidden = "".join(re.findall(r"<!--.*?-->", body, re.S))
    assert len(hidden) < 1500


def test_the_reply_says_what_happened_per_cluster_and_the_reaction_matches(fake, repo, webhook, source_pr):
    plan, comment_id = comment_plan(webhook, source_pr["number"], "/maple port perlmutter aurora")
    found = results("1", ("perlmutter", "aurora"))
    found[0]["clusters"][1].update(verification="failed", log_url="https://ci.example/aurora/9")
    run_plan(repo, plan, lambda *a: found)
    reply = fake.comments[-1]["body"]
    assert re.search(r"perlmutter.*passed", reply) and re.search(r"aurora.*failed.*\(https://ci\.example/aurora/9\)", reply)
    assert [r["content"] for r in fake.reactions] == ["eyes", "confused"]
    assert "It targets `feature`, this PR's branch" in reply
    on_head = {r["name"]: r["conclusion"] for r in fake.check_runs if r["head_sha"] == fake.refs["heads/feature"]}
    assert on_head == {"maple / perlmutter / jobs/train.sh": "success", "maple / aurora / jobs/train.sh": "failure"}


def test_a_push_error_reaches_the_report_issue(fake, repo, webhook):
    def broken(*args):
        raise MapleError("jobs/train.sh: cannot port without entrypoint")

    with pytest.raises(MapleError):
        run_plan(repo, push(webhook, fake), broken, report=Config().schedule)
    [issue] = fake.issues
    assert "cannot port without entrypoint" in (issue["body"] + "".join(c["body"] for c in fake.comments))


@pytest.mark.parametrize("line, hint", [
    ("/maple port perlmuter", "did you mean `perlmutter`"),
    ("/maple prot aurora", "did you mean `port`"),
    ("/maple port aurora --entrypont train.py", "did you mean `--entrypoint`"),
])
def test_typos_get_did_you_mean_and_a_short_answer(line, hint):
    with pytest.raises(CommandError) as error:
        parse_comment(line, KNOWN)
    assert hint in str(error.value) and str(error.value).count("\n") <= 4


def test_several_scripts_port_what_it_can_and_give_the_command_to_retry(tmp_path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "good.sh").write_text("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=4\nsrun python train.py\n")
    (tmp_path / "jobs" / "bare.sh").write_text("#!/bin/bash\n#SBATCH -N 1\necho hello\n")
    pipeline = Pipeline(Config(), lambda ref: nullcontext(tmp_path), env={})
    [result] = pipeline.port(BotCommand("port", ("aurora",)), ("jobs/good.sh", "jobs/bare.sh"), "c0")
    assert result["source"] == "jobs/good.sh"
    [note] = result["notes"]
    assert "jobs/bare.sh" in note and "`/maple port aurora --from jobs/bare.sh --entrypoint PROGRAM`" in note


def test_the_settings_shape_the_pr(fake, repo, webhook, source_pr, tmp_path):
    (tmp_path / "maple.yml").write_text(
        "pull_requests:\n  labels: [hpc]\n  reviewers: [mona]\n  assignees: [hubot]\n"
        "  title_prefix: 'ci(port):'\n  commit_prefix: 'ci:'\n"
        "fixes: suggest\nrefresh_on_push: false\nignore: [polaris]\n")
    settings = load_config(tmp_path / "maple.yml", KNOWN)
    plan, _ = comment_plan(webhook, source_pr["number"], "/maple port perlmutter polaris")
    run_plan(repo, plan, lambda command, *a: results("1", command.clusters), settings=settings)
    [pr] = bot_pulls(fake)
    assert pr["title"].startswith("ci(port): ") and pr["labels"] == ["hpc"]
    assert pr["reviewers"] == ["mona"] and pr["assignees"] == ["hubot"]
    assert fake.commits[fake.refs["heads/maple/port-pr-1"]]["message"].startswith("ci: ")
    assert "scripts/polaris/train.sh" not in fake.files_at("heads/maple/port-pr-1")
    # refresh_on_push: false leaves pushes alone.
    assert run_plan(repo, push(webhook, fake), lambda *a: pytest.fail("no port"), settings=settings).results == []


@pytest.mark.parametrize("text, error", [
    ("fixes: always\n", "`fixes`"),
    ("pull_requests: {reviewers: ['bad name!']}\n", "`pull_requests.reviewers.0`"),
    ("ignore: [mars]\n", "unknown cluster(s) mars"),
    ("refresh_on_push: perhaps\n", "`refresh_on_push`"),
])
def test_invalid_settings_are_named(tmp_path, text, error):
    (tmp_path / "maple.yml").write_text(text)
    with pytest.raises(MapleError, match=re.escape(error)):
        load_config(tmp_path / "maple.yml", KNOWN)
