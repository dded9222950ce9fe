"""run_action: from Actions' environment (event name, payload file, API URL) to an exit code."""

import json
import os
import re
from pathlib import Path

import pytest
from scenarios import KNOWN, comment_payload, port_results, workflow_commands

from maple_ci.cli import main
from maple_ci.github.action import run_action


def action_env(monkeypatch, fake, tmp_path, payload, event="issue_comment"):
    """The environment GitHub Actions gives the step, for this event."""
    (tmp_path / "event.json").write_text(json.dumps(payload))
    env = {"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": str(tmp_path / "event.json"), "GITHUB_TOKEN": "ghs_x",
           "GITHUB_API_URL": fake.base_url, "GITHUB_REPOSITORY": f"{fake.owner}/{fake.name}",
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "GITHUB_OUTPUT": str(tmp_path / "output")}
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def read_outputs(path):
    """GITHUB_OUTPUT as the runner reads it: `name=value` lines or `name<<DELIMITER` blocks."""
    text = path.read_text()
    return {m["name"]: m["block"] if m["block"] is not None else m["value"] for m in re.finditer(
        r"(?m)^(?P<name>[\w-]+)(?:=(?P<value>.*)|<<(?P<end>\S+)\n(?P<block>.*?)\n(?P=end))$", text, re.S)}


def run(port=port_results):
    return run_action(lambda *args: port(), KNOWN, pace=False)


def test_a_failed_check_fails_the_job_after_delivery(fake, source_pr, webhook, tmp_path, monkeypatch, capsys):
    def failing():
        results = port_results()
        results[0]["clusters"][0]["checks"][0].update(ok=False, line=2)  # severity defaults to error: a failure
        return results

    action_env(monkeypatch, fake, tmp_path, comment_payload(webhook, source_pr["number"], "/maple port aurora"))
    assert run(failing) == 1
    assert "heads/maple/port-pr-1" in fake.refs and len(fake.pulls) == 2
    assert "| perlmutter |" in (tmp_path / "summary.md").read_text()
    failed = port_results()[0]["clusters"][0]
    commands = workflow_commands(capsys.readouterr().out)
    assert commands[0] == ("add-mask", {}, "ghs_x")  # before any request
    assert [c[:2] for c in commands[1:3]] == [("group", {}), ("endgroup", {})] and commands[1][2] == "maple port aurora"
    check = failed["checks"][0]  # the failing line is annotated on the workflow run too
    assert ("error", {"title": f"maple / {failed['cluster']}: {check['name']}", "file": failed["path"], "line": "2"},
            check["message"]) in commands
    assert read_outputs(tmp_path / "output")["pr-number"] == str(fake.pulls[1]["number"])


def test_invalid_command_exits_2_after_replying(fake, source_pr, webhook, tmp_path, monkeypatch):
    action_env(monkeypatch, fake, tmp_path, comment_payload(webhook, source_pr["number"], "/maple port mars"))
    assert run() == 2
    assert "Unknown cluster" in fake.comments[0]["body"]


def test_events_without_work_make_no_request(fake, webhook, tmp_path, monkeypatch):
    action_env(monkeypatch, fake, tmp_path, webhook("push", ref="refs/heads/master"), event="push")
    monkeypatch.delenv("GITHUB_TOKEN")  # not even needed
    assert run() == 0 and fake.requests == []


def maple_action(capsys) -> tuple[int, str]:
    """`maple action` as the workflow runs it: its exit code and everything it printed."""
    with pytest.raises(SystemExit) as exit_info:
        main(["action"])
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out + captured.err


def test_maple_action_command_reads_the_config_and_stops_on_an_invalid_one(fake, webhook, tmp_path, monkeypatch,
                                                                             capsys):
    action_env(monkeypatch, fake, tmp_path, webhook("push", ref="refs/heads/master"), event="push")
    (tmp_path / "maple.yml").write_text("targets: [perlmutter]\nsources: ['jobs/*.sh']\n")
    monkeypatch.setenv("INPUT_CONFIG", str(tmp_path / "maple.yml"))  # as action.yml passes the input
    monkeypatch.setenv("MAPLE_CONFIG", "")  # the setting it becomes, undone after the test
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    code, output = maple_action(capsys)
    assert code == 0 and "no tracked launch script changed" in output and fake.requests == []

    (tmp_path / "maple.yml").write_text("targets: [perlmutter]\nverification: {perlmutter: ssh}\n")
    code, output = maple_action(capsys)
    assert code == 2 and "`verification.perlmutter`" in output


def test_an_invalid_config_is_answered_in_the_thread_and_nothing_runs(fake, source_pr, webhook, tmp_path, monkeypatch,
                                                                       capsys):
    (tmp_path / "maple.yml").write_text("targets: [perlmutter, mars]\n")
    monkeypatch.setenv("MAPLE_CONFIG", str(tmp_path / "maple.yml"))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path / "no-checkout"))
    action_env(monkeypatch, fake, tmp_path, comment_payload(webhook, source_pr["number"], "LGTM"))
    assert maple_action(capsys)[0] == 0 and fake.requests == []  # not addressed to the bot: a broken config is no reason to speak

    action_env(monkeypatch, fake, tmp_path, comment_payload(webhook, source_pr["number"], "/maple port aurora"))
    code, output = maple_action(capsys)
    assert code == 2 and "unknown cluster(s) mars" in output
    [reply] = fake.comments
    assert "configuration is invalid" in reply["body"] and "unknown cluster(s) mars in `targets`" in reply["body"]
    assert [r["content"] for r in fake.reactions] == ["confused"]
    assert fake.pulls == [source_pr] and not any(ref.startswith("heads/maple/") for ref in fake.refs)  # nothing ported


def test_a_push_with_an_invalid_config_says_why_on_the_dashboard(fake, webhook, tmp_path, monkeypatch, capsys):
    """No thread asked for a push: the error goes where the maintainer looks, the dashboard issue."""
    (tmp_path / "maple.yml").write_text("targets: [perlmutter]\nschedule: {interval: hourly}\n")
    monkeypatch.setenv("MAPLE_CONFIG", str(tmp_path / "maple.yml"))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path / "no-checkout"))
    push = webhook("push")
    push.update(ref=f"refs/heads/{push['repository']['default_branch']}")
    action_env(monkeypatch, fake, tmp_path, push, event="push")
    code, output = maple_action(capsys)
    assert code == 2 and "`schedule.interval`" in output
    [issue] = fake.issues
    [comment] = fake.comments
    assert comment["issue"] == issue["number"] and comment["body"].startswith("The push run stopped: its configuration is invalid")
    assert "`schedule.interval`: Input should be 'daily', 'weekly' or 'monthly'" in comment["body"]


def test_action_yml_passes_every_input_and_maple_reads_each_one():
    import yaml

    from maple_ci.github.action import INPUT_SETTINGS

    action = yaml.safe_load((Path(__file__).parents[2] / "action.yml").read_text())
    [run_step] = [step for step in action["runs"]["steps"] if step.get("id") == "maple"]
    assert '-I -m maple_ci action' in run_step["run"]
    passed = dict(run_step["env"])
    wanted = {f"INPUT_{name.replace('-', '_').upper()}": f"${{{{ inputs.{name} }}}}"
              for name in action["inputs"] if name != "python-version"}  # used by the setup step
    assert passed == wanted
    assert {f"INPUT_{name.upper()}" for name in INPUT_SETTINGS} == set(wanted)


def test_inputs_become_settings_and_secrets_are_masked_first(monkeypatch, capsys):
    from maple_ci.github.action import apply_inputs

    monkeypatch.setenv("INPUT_TARGETS", "perlmutter aurora")
    monkeypatch.setenv("INPUT_GITLAB_TRIGGER_TOKEN", "glptt-secret")
    monkeypatch.setenv("INPUT_BACKEND", "")  # an empty input keeps the setting
    monkeypatch.setenv("MAPLE_BACKEND", "slurm")
    for setting in ("MAPLE_TARGETS", "MAPLE_GITLAB_TRIGGER_TOKEN"):
        monkeypatch.setenv(setting, "")  # so that what apply_inputs sets is undone after the test
    apply_inputs()
    assert os.environ["MAPLE_TARGETS"] == "perlmutter aurora" and os.environ["MAPLE_BACKEND"] == "slurm"
    assert os.environ["MAPLE_GITLAB_TRIGGER_TOKEN"] == "glptt-secret"
    assert workflow_commands(capsys.readouterr().out) == [("add-mask", {}, "glptt-secret")]


@pytest.mark.parametrize("workflow", sorted((Path(__file__).parents[2] / "workflows" / "github").glob("*.yml")))
def test_shipped_workflows_give_only_inputs_the_action_declares(workflow):
    import yaml

    declared = yaml.safe_load((Path(__file__).parents[2] / "action.yml").read_text())["inputs"]
    steps = [step for job in yaml.safe_load(workflow.read_text())["jobs"].values() for step in job["steps"]]
    uses = [step for step in steps if step.get("uses", "").startswith("maple-ci/maple-ci@")]
    assert uses  # the comment workflow's trace gate uses the action in three jobs (docs/trace-gate.md)
    for maple in uses:
        assert set(maple.get("with", {})) <= set(declared)
