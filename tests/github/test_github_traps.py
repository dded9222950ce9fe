"""Issue 28 D: the traps a maintainer hit in the second review (shared/research/bot-ux-2026-11-29.md),
driven against the fake GitHub (a stand-in for github.com) from GitHub's recorded webhook payloads
(@octokit/webhooks-examples). One test per trap."""

import re
from contextlib import nullcontext
from pathlib import Path

import pytest
from scenarios import KNOWN, SCRIPT, cluster_result, comment_plan, run_result
from test_github_maintainer import bot_pulls, fix_pipeline

from maple_ci.github.bot import run_plan
from maple_ci.github.commands import BotCommand, CommandError, parse_comment
from maple_ci.github.config import Config
from maple_ci.github.events import plan_event
from maple_ci.github.pipeline import Pipeline

TRACKED = ("jobs/*.sh",)


def ported(command, sources, ref, version="1"):
    """Each asked script ported to the command's clusters (what the pipeline would return)."""
    found = []
    for source in sources or ("jobs/train.sh",):
        clusters = [cluster_result(c) | {"path": f"scripts/{c}/{source.split('/')[-1]}"} for c in command.clusters]
        for c in clusters:
            c["content"] += f"# {source} v{version}\n"
        found.append({"source": source, "intent": {"entrypoint": "train.py"}, "clusters": clusters})
    return found


def push(webhook, fake, files, targets=("perlmutter",)):
    """GitHub's recorded push payload, moved onto a new commit of main that writes `files`."""
    payload = webhook("push", ref="refs/heads/master")
    before = fake.files_at("heads/main")
    fake.refs["heads/main"] = fake.commit_files(files, [fake.refs["heads/main"]], "edit")
    payload["repository"]["default_branch"] = "main"
    payload.update(ref="refs/heads/main", after=fake.refs["heads/main"])
    payload["commits"] = [{**payload["commits"][0], "added": [p for p in files if p not in before], "removed": [],
                           "modified": [p for p in files if p in before]}]
    return plan_event("push", payload, KNOWN, TRACKED, targets)


def comments_on(fake, number):
    return [c["body"] for c in fake.comments if c["issue"] == number]


def test_closing_a_bot_pr_declines_its_script_only_and_says_how_to_undo_it(fake, repo, webhook):
    run_plan(repo, push(webhook, fake, {"jobs/train.sh": SCRIPT}), ported)
    [first] = bot_pulls(fake)
    first["state"] = "closed"  # the maintainer closed it without merging
    run_plan(repo, push(webhook, fake, {"jobs/train.sh": SCRIPT + "# 2\n"}), ported)
    assert bot_pulls(fake) == [first]  # train.sh is declined: no PR for it
    [told] = comments_on(fake, first["number"])
    assert "pushes and nightly runs no longer port `jobs/train.sh`" in told
    assert "reopen this PR" in told and "`/maple unignore jobs/train.sh`" in told and told in first["body"]
    run_plan(repo, push(webhook, fake, {"jobs/train.sh": SCRIPT + "# 3\n"}), ported)
    assert len(comments_on(fake, first["number"])) == 1  # said once

    # A newly added tracked script is not muted by the closed PR: it gets a PR of its own.
    run_plan(repo, push(webhook, fake, {"jobs/eval.sh": SCRIPT}), ported)
    [_, second] = bot_pulls(fake)
    assert second["state"] == "open"
    assert [p for p in fake.files_at("heads/maple/port-branch-main") if p.startswith("scripts/")] == ["scripts/perlmutter/eval.sh"]
    # ...and train.sh stays declined in it: a later push of train.sh does not reach the new PR.
    run_plan(repo, push(webhook, fake, {"jobs/train.sh": SCRIPT + "# 4\n"}), ported)
    assert "scripts/perlmutter/train.sh" not in fake.files_at("heads/maple/port-branch-main")


@pytest.mark.parametrize("line, said", [
    ("/maple ignore auroa", "`auroa` is not ported in http://github.test/octo/ports/pull/2: did you mean `aurora`?"),
    ("/maple ignore polaris", "`polaris` is not ported in http://github.test/octo/ports/pull/2"),
    ("/maple ignore jobs/nothere.sh", "`jobs/nothere.sh` is not ported in"),
])
def test_ignoring_what_the_pr_does_not_hold_is_refused_with_did_you_mean(fake, repo, webhook, source_pr, line, said):
    run_plan(repo, comment_plan(webhook, source_pr["number"], "/maple port perlmutter aurora")[0], ported)
    body = bot_pulls(fake)[0]["body"]
    run_plan(repo, comment_plan(webhook, source_pr["number"], line)[0], ported)
    assert said in fake.comments[-1]["body"]
    assert fake.reactions[-1]["content"] == "confused"  # not 🚀: nothing was done
    assert bot_pulls(fake)[0]["body"] == body


def test_unignore_of_a_cluster_the_settings_ignore_says_where_it_is_set(fake, repo, webhook, source_pr):
    settings = Config(ignore=["polaris"])
    run_plan(repo, comment_plan(webhook, source_pr["number"], "/maple port perlmutter polaris")[0], ported,
             settings=settings)
    assert "`polaris` is ignored in `.github/maple.yml` (`ignore:`): remove it there" in fake.comments[-1]["body"]
    assert "/maple unignore polaris" not in fake.comments[-1]["body"]  # the bot no longer suggests what cannot work
    run_plan(repo, comment_plan(webhook, source_pr["number"], "/maple unignore polaris")[0], ported, settings=settings)
    assert fake.comments[-1]["body"].startswith("Not changed: `polaris` is ignored in `.github/maple.yml`")
    assert fake.reactions[-1]["content"] == "confused"


def test_a_refusal_is_answered_confused_not_with_a_rocket(fake, repo, webhook, source_pr):
    run_plan(repo, comment_plan(webhook, source_pr["number"], "/maple port perlmutter")[0], ported)
    branch = "heads/maple/port-pr-1"
    fake.refs[branch] = fake.commit_files({"notes.txt": "mine\n"}, [fake.refs[branch]], "wip")
    run_plan(repo, comment_plan(webhook, source_pr["number"], "/maple port aurora")[0], ported)
    assert "has commits by others" in fake.comments[-1]["body"]
    assert fake.reactions[-1]["content"] == "confused"


def test_no_pattern_of_the_knowledge_base_reaches_the_note(tmp_path):
    """The real debug agent on an srun gres refusal whose known fixes need script lines this script
    lacks (the research's nightly note): the note explains the error, without rule ids or regexes."""
    log = "srun: error: Unable to allocate resources: Invalid generic resource (gres) specification\n"

    def backend(name, **run):  # the stand-in for the cluster: the job is refused as Slurm refuses it
        return run_result(False, log, "https://ci.example/perlmutter/1", "job FAILED (exit 1)")

    pipeline = Pipeline(Config(verification={"default": "slurm"}), lambda ref: nullcontext(tmp_path), env={},
                        backend=backend)
    script = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gres=gpu:a100:4\nsrun python train.py\n"
    results = [{"source": "jobs/train.sh", "intent": {"framework": "pytorch"},
                "clusters": [cluster_result("perlmutter") | {"content": script, "verification": "pending"}]}]
    [c] = pipeline.verify(BotCommand("port", ("perlmutter",)), results, "c0")[0]["clusters"]
    assert "Invalid generic resource" in c["note"] and "request GPUs the way the cluster documents" in c["note"]
    assert not re.search(r"\\[bsn]|\[\^|\(\?P<|slurm-invalid-gres|nothing matching", c["note"]), c["note"]
    assert ".." not in c["note"]


def test_a_misspelt_command_and_cluster_are_both_named_in_one_reply():
    with pytest.raises(CommandError) as error:
        parse_comment("/maple prot perlmuter aurora", KNOWN)
    said = str(error.value)
    assert "did you mean `port`?" in said and "Unknown cluster `perlmuter`: did you mean `perlmutter`?" in said
    assert "`aurora`" not in said  # a known cluster is not flagged


BROKEN = "#!/bin/bash\n#SBATCH -N 1\n\nsrun python train.py\n"  # fails on the NCCL stand-in until NCCL_DEBUG=INFO


def broken_port(*args):
    return [{"source": "jobs/train.sh", "intent": {"framework": "pytorch"},
             "clusters": [cluster_result("perlmutter") | {"content": BROKEN, "verification": "pending"}]}]


def commit_suggestion(fake, branch, review_comment):
    """What GitHub's "Commit suggestion" button does: the person commits the suggested lines."""
    body = review_comment["body"].split("```suggestion\n", 1)[1].rsplit("```", 1)[0]
    lines = fake.files_at(branch)[review_comment["path"]].splitlines(keepends=True)
    lines[review_comment.get("start_line", review_comment["line"]) - 1:review_comment["line"]] = [body]
    fake.refs[branch] = fake.commit_files({review_comment["path"]: "".join(lines)}, [fake.refs[branch]],
                                          "Apply suggestions from code review")
    return fake.refs[branch]


def test_committing_the_bots_own_suggestion_does_not_stop_it_and_recreate_keeps_the_fix(fake, repo, webhook, source_pr):
    pipeline = fix_pipeline("suggest", runs := [])
    ask = lambda line: run_plan(repo, comment_plan(webhook, source_pr["number"], line)[0], broken_port,  # noqa: E731
                                pipeline.verify, settings=pipeline.config)
    ask("/maple port perlmutter")
    branch = "heads/maple/port-pr-1"
    [review] = fake.reviews
    applied = commit_suggestion(fake, branch, review["comments"][0])
    del runs[:]
    ask("/maple port perlmutter")  # the same port again, after the maintainer applied the suggestion
    [pr] = bot_pulls(fake)
    assert "stopped updating" not in pr["body"] and "commits by others" not in fake.comments[-1]["body"]
    assert fake.refs[branch] == applied  # built on: the fix is already there, nothing to commit
    assert runs == [("scripts/perlmutter/train.sh", True, True)]  # verified with the fix: it passes
    assert "✅ perlmutter" in fake.comments[-1]["body"]

    ask("/maple recreate")  # starts from the PR's branch again and keeps the bot's fix
    assert fake.commits[fake.refs[branch]]["parents"] == [fake.refs["heads/feature"]]
    assert "export NCCL_DEBUG=INFO" in fake.files_at(branch)["scripts/perlmutter/train.sh"]
    assert runs[-1] == ("scripts/perlmutter/train.sh", True, True)


def test_a_persons_other_edit_still_stops_the_bot(fake, repo, webhook, source_pr):
    pipeline = fix_pipeline("suggest")
    plan = comment_plan(webhook, source_pr["number"], "/maple port perlmutter")[0]
    run_plan(repo, plan, broken_port, pipeline.verify, settings=pipeline.config)
    branch = "heads/maple/port-pr-1"
    commit_suggestion(fake, branch, fake.reviews[0]["comments"][0])
    fake.refs[branch] = mine = fake.commit_files({"scripts/perlmutter/train.sh": "#!/bin/bash\n# mine\n"},
                                                 [fake.refs[branch]], "my own edit")
    run_plan(repo, plan, broken_port, pipeline.verify, settings=pipeline.config)
    assert fake.refs[branch] == mine and "commits by others" in fake.comments[-1]["body"]


def test_recreate_posts_a_pending_suggestion_again(fake, repo, webhook, source_pr):
    pipeline = fix_pipeline("suggest")
    for line in ("/maple port perlmutter", "/maple recreate"):
        run_plan(repo, comment_plan(webhook, source_pr["number"], line)[0], broken_port, pipeline.verify,
                 settings=pipeline.config)
    first, second = fake.reviews
    assert second["commit_id"] == fake.refs["heads/maple/port-pr-1"]  # on the branch as recreated
    assert "superseded" in first["body"] and "a fix is suggested in the PR's review" in fake.comments[-1]["body"]
