"""Event planning driven by GitHub's own recorded webhook payloads (@octokit/webhooks-examples)."""

from maple_ci.github.commands import BotCommand
from maple_ci.github.events import PUSH_COMMITS_CAP, plan_event

KNOWN = ("perlmutter", "aurora", "polaris")
TARGETS = ("perlmutter", "aurora")
TRACKED = ("jobs/*.sh", "*.pbs")


def comment_event(webhook, body, on_pr=True, **comment):
    payload = webhook("issue_comment", action="created")
    payload["comment"].update(body=body, **comment)
    if on_pr:  # GitHub marks a PR's issue with a pull_request object
        payload["issue"]["pull_request"] = {"url": payload["issue"]["url"].replace("/issues/", "/pulls/")}
    return payload


def plan(name, payload):
    return plan_event(name, payload, KNOWN, tracked=TRACKED, targets=TARGETS)


def test_port_comment_on_a_pr(webhook):
    payload = comment_event(webhook, "LGTM\n/maple port perlmutter aurora")
    p = plan("issue_comment", payload)
    number = payload["issue"]["number"]
    assert p.command == BotCommand("port", ("perlmutter", "aurora"))
    assert (p.key, p.pull_number, p.issue_number) == (f"pr-{number}", number, number)
    assert (p.base, p.ref) == (None, None)  # taken from the PR when the plan runs
    assert (p.actor, p.association) == (payload["comment"]["user"]["login"], "OWNER")
    assert (p.comment_id, p.reaction, p.reply) == (payload["comment"]["id"], "eyes", None)


def test_port_on_an_issue_needs_a_source_and_uses_the_default_branch(webhook):
    rejected = plan("issue_comment", comment_event(webhook, "/maple port aurora", on_pr=False))
    assert rejected.command is None and rejected.reaction == "confused" and "--from PATH" in rejected.reply

    payload = comment_event(webhook, "/maple port aurora --from jobs/train.sh", on_pr=False)
    p = plan("issue_comment", payload)
    assert p.command.source == "jobs/train.sh" and p.pull_number is None
    assert (p.key, p.base, p.ref) == (f"issue-{payload['issue']['number']}", "master", "master")
    recreate = plan("issue_comment", comment_event(webhook, "/maple recreate", on_pr=False))
    assert recreate.command.recreate and recreate.key == p.key  # the scripts come from that request's PR


def test_invalid_command_is_answered_with_help(webhook):
    p = plan("issue_comment", comment_event(webhook, "/maple port mars"))
    assert p.command is None and p.reaction == "confused"
    assert "Unknown cluster `mars`" in p.reply and "perlmutter" in p.reply
    assert p.actor is not None  # even the reply waits for the permission check


def test_help_comment(webhook):
    p = plan("issue_comment", comment_event(webhook, "/maple help"))
    assert p.command is None and p.reply.startswith("Usage:")


def test_commands_from_untrusted_associations_get_only_a_refusal(webhook):
    for association in ("NONE", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR"):
        p = plan("issue_comment", comment_event(webhook, "/maple port aurora", author_association=association))
        assert p.command is None and p.reaction is None and p.actor is None, p.reason
        assert p.reply.startswith("Sorry @Codertocat") and p.issue_number is not None


def test_comments_the_bot_ignores(webhook):
    ignored = [
        comment_event(webhook, "nice work"),
        comment_event(webhook, "nice work", author_association="NONE"),
        comment_event(webhook, "/maple port aurora", user={"login": "maple[bot]", "type": "Bot"}),
    ]
    edited = webhook("issue_comment", action="edited")
    edited["comment"]["body"] = "/maple port aurora"
    for payload in ignored + [edited]:
        p = plan("issue_comment", payload)
        assert p.command is None and p.reply is None and p.reaction is None, p.reason


def test_push_to_default_branch_ports_changed_tracked_scripts(webhook):
    payload = webhook("push", ref="refs/heads/master")
    assert plan("push", payload).command is None  # the recorded push only adds README.md
    payload["commits"] += [
        {"added": ["jobs/train.sh", "old.pbs"], "modified": ["README.md"], "removed": []},
        {"added": [], "modified": ["jobs/train.sh", "run.pbs"], "removed": ["old.pbs"]},
    ]
    p = plan("push", payload)
    assert p.command == BotCommand("port", TARGETS)
    assert p.sources == ("jobs/train.sh", "run.pbs")  # old.pbs no longer exists
    assert (p.key, p.base, p.ref) == ("branch-master", "master", payload["after"])
    assert p.actor is None  # a push needed write access already


def test_push_with_a_truncated_commit_list_ports_every_tracked_script(webhook):
    payload = webhook("push", ref="refs/heads/master")
    payload["commits"] = [{"added": [], "modified": ["README.md"], "removed": []}] * PUSH_COMMITS_CAP
    p = plan("push", payload)
    assert p.command is not None and p.sources == ()


def test_pushes_the_bot_ignores(webhook):
    tag = webhook("push", ref="refs/tags/simple-tag", deleted=False)
    deleted = webhook("push", deleted=True)
    own_branch = webhook("push", ref="refs/heads/master")
    own_branch["ref"] = "refs/heads/maple/port-pr-1"
    own_branch["commits"][0]["added"] = ["jobs/train.sh"]
    for payload in (tag, deleted, own_branch):
        assert plan("push", payload).command is None
    untracked = webhook("push", ref="refs/heads/master")
    assert plan_event("push", untracked, KNOWN).command is None  # nothing configured


def test_schedule_verifies_every_target_on_the_default_branch(webhook):
    payload = {"schedule": "17 3 * * *", "repository": webhook("push", ref="refs/heads/master")["repository"]}
    p = plan("schedule", payload)
    assert p.command == BotCommand("verify", TARGETS) and p.ref == "master" and p.issue_number is None and p.report


def test_workflow_dispatch_runs_its_command_input(webhook):
    payload = webhook("workflow_dispatch", ref="refs/heads/master")
    payload["inputs"] = {"command": "port polaris --from jobs/train.sh --nodes 2"}
    p = plan("workflow_dispatch", payload)
    assert p.command == BotCommand("port", ("polaris",), source="jobs/train.sh", nodes=2)
    assert (p.key, p.base, p.actor) == ("branch-master", "master", None)

    payload["inputs"] = {"command": "port mars"}
    bad = plan("workflow_dispatch", payload)
    assert bad.command is None and "Unknown cluster" in bad.reply and bad.issue_number is None

    payload["inputs"] = {}
    assert plan("workflow_dispatch", payload).command == BotCommand("verify", TARGETS)


def test_other_events_are_ignored_with_a_reason(webhook):
    p = plan("star", webhook("star"))
    assert p.command is None and "star" in p.reason
