"""run_action: from Actions' environment (event name, payload file, API URL) to an exit code."""

import json

from scenarios import KNOWN, comment_payload, port_results

from maple_ci.github.action import run_action


def action_env(fake, tmp_path, payload, event="issue_comment"):
    (tmp_path / "event.json").write_text(json.dumps(payload))
    return {"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": str(tmp_path / "event.json"), "GITHUB_TOKEN": "ghs_x",
            "GITHUB_API_URL": fake.base_url, "GITHUB_REPOSITORY": f"{fake.owner}/{fake.name}",
            "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}


def run(env, port=port_results):
    return run_action(lambda *args: port(), KNOWN, env=env, pace=False)


def test_a_failed_check_fails_the_job_after_delivery(fake, source_pr, webhook, tmp_path):
    def failing():
        results = port_results()
        results[0]["clusters"][0]["checks"][0].update(ok=False, line=2)  # level defaults to failure
        return results

    assert run(action_env(fake, tmp_path, comment_payload(webhook, source_pr["number"], "/maple port aurora")), failing) == 1
    assert "heads/maple/port-pr-1" in fake.refs and len(fake.pulls) == 2
    assert "| perlmutter |" in (tmp_path / "summary.md").read_text()


def test_invalid_command_exits_2_after_replying(fake, source_pr, webhook, tmp_path):
    assert run(action_env(fake, tmp_path, comment_payload(webhook, source_pr["number"], "/maple port mars"))) == 2
    assert "Unknown cluster" in fake.comments[0]["body"]


def test_events_without_work_make_no_request(fake, webhook, tmp_path):
    env = action_env(fake, tmp_path, webhook("push", ref="refs/heads/master"), event="push")
    del env["GITHUB_TOKEN"]  # not even needed
    assert run(env) == 0 and fake.requests == []


def test_maple_action_command_reads_the_config_and_stops_on_an_invalid_one(fake, webhook, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from maple_ci.cli import app

    env = action_env(fake, tmp_path, webhook("push", ref="refs/heads/master"), event="push")
    (tmp_path / "maple.yml").write_text("targets: [perlmutter]\nsources: ['jobs/*.sh']\n")
    env |= {"MAPLE_CONFIG": str(tmp_path / "maple.yml"), "GITHUB_WORKSPACE": str(tmp_path)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    ok = CliRunner().invoke(app, ["action"])
    assert ok.exit_code == 0 and "no tracked launch script changed" in ok.output and fake.requests == []

    (tmp_path / "maple.yml").write_text("targets: [perlmutter]\nverification: {perlmutter: ssh}\n")
    bad = CliRunner().invoke(app, ["action"])
    assert "`verification.perlmutter`" in str(bad.exception) and bad.exception.exit_code == 2


def test_an_invalid_config_is_answered_in_the_thread_and_nothing_runs(fake, source_pr, webhook, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from maple_ci.cli import app

    (tmp_path / "maple.yml").write_text("targets: [perlmutter, mars]\n")
    cli_env = {"MAPLE_CONFIG": str(tmp_path / "maple.yml"), "GITHUB_WORKSPACE": str(tmp_path / "no-checkout")}
    chat = action_env(fake, tmp_path, comment_payload(webhook, source_pr["number"], "LGTM"))
    for name, value in (chat | cli_env).items():
        monkeypatch.setenv(name, value)
    quiet = CliRunner().invoke(app, ["action"])
    assert quiet.exit_code == 0 and fake.requests == []  # not addressed to the bot: a broken config is no reason to speak

    asked = action_env(fake, tmp_path, comment_payload(webhook, source_pr["number"], "/maple port aurora"))
    monkeypatch.setenv("GITHUB_EVENT_PATH", asked["GITHUB_EVENT_PATH"])
    bad = CliRunner().invoke(app, ["action"])
    assert bad.exception.exit_code == 2 and "unknown cluster(s) mars" in str(bad.exception)
    [reply] = fake.comments
    assert "configuration is invalid" in reply["body"] and "unknown cluster(s) mars in `targets`" in reply["body"]
    assert [r["content"] for r in fake.reactions] == ["confused"]
    assert fake.pulls == [source_pr] and not any(ref.startswith("heads/maple/") for ref in fake.refs)  # nothing ported
