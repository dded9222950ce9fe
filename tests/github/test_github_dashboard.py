"""The portability dashboard (one issue, as Renovate's Dependency Dashboard) against the stateful
fake GitHub (tests/github/fake_github.py, the stand-in for github.com) and GitHub's recorded
`issues.edited` payload (@octokit/webhooks-examples): a row per script and cluster kept up to
date each night, failing since, fix PRs closed when green, and its checkboxes run as commands."""

from scenarios import KNOWN, cluster_result, nightly

from maple_ci.github.bot import run_plan
from maple_ci.github.config import Config, Schedule
from maple_ci.github.dashboard import read_rows, render, row_key
from maple_ci.github.events import plan_event
from maple_ci.github.report import MARKER
from maple_ci.github.ticks import box, ticked

SETTINGS = Schedule(report_issue_title="Portability report", labels=["maple-ci"])


def push_main(fake, message):
    """A commit on main, so each night verifies another commit."""
    fake.refs["heads/main"] = fake.commit_files({"notes.md": message}, [fake.refs["heads/main"]], message)
    return fake.refs["heads/main"]


def test_one_dashboard_updated_each_night_failing_since_kept_and_fix_prs_closed_when_green(fake, repo):
    nightly(fake, repo, {"perlmutter": "passed", "aurora": "passed"}, SETTINGS)
    [issue] = fake.issues  # opened on the first night, green or not: it is where every row lives
    assert (issue["title"], issue["labels"], issue["state"]) == ("Portability report", ["maple-ci"], "open")
    assert issue["body"].startswith(MARKER) and issue["body"].count("✅ passed") == 2

    first_failure = push_main(fake, "night 2")
    nightly(fake, repo, {"perlmutter": "passed", "aurora": "failed"}, SETTINGS)
    rows, _ = read_rows(issue["body"])
    aurora = rows[row_key("scripts/aurora/train.sh", "aurora")]
    assert aurora["status"] == "failure" and aurora["since"].endswith(f"at {first_failure[:12]}")
    assert "aurora run failed" in issue["body"] and "<!-- maple: verify aurora --> Retry the verification on aurora" in issue["body"]

    push_main(fake, "night 3")
    nightly(fake, repo, {"perlmutter": "passed", "aurora": "failed"}, SETTINGS)
    assert len(fake.issues) == 1  # the same issue, not a new one per regression
    assert read_rows(issue["body"])[0][row_key("scripts/aurora/train.sh", "aurora")]["since"] == aurora["since"]

    # A fix PR the nightly opened for aurora; the next green night closes it, saying why.
    fake.refs["heads/maple/port-fix-aurora"] = fake.commit_files({"scripts/aurora/train.sh": "fixed\n"}, [fake.refs["heads/main"]], "fix")
    fix = fake.open_pull("maple/port-fix-aurora", "main", "maple: fix aurora")
    green = push_main(fake, "night 4")
    nightly(fake, repo, {"perlmutter": "passed", "aurora": "passed"}, SETTINGS)
    assert fix["state"] == "closed" and f"passed on aurora at `{green[:12]}` without this fix" in fake.comments[-1]["body"]
    assert (len(fake.issues), issue["state"]) == (1, "open") and "❌" not in issue["body"]
    assert read_rows(issue["body"])[0][row_key("scripts/aurora/train.sh", "aurora")]["since"] is None


def test_an_issue_with_the_same_title_written_by_a_person_is_left_alone(fake, repo):
    fake.issues.append({"number": 1, "title": "Portability report", "body": "my notes", "state": "open", "labels": ["maple-ci"]})
    nightly(fake, repo, {"aurora": "failed"}, SETTINGS)
    assert [i["body"] for i in fake.issues][0] == "my notes" and fake.issues[1]["body"].startswith(MARKER)


def test_rows_not_yet_ported_get_a_port_box_and_ignored_rows_an_unignore_box():
    rows = {row_key("jobs/train.sbatch", "aurora"): {
        "path": "scripts/aurora/train.pbs", "status": "failure", "at": "2026-11-29", "commit": "a" * 12,
        "log": "https://ci.example/1", "since": "2026-11-28 at bbbbbbbbbbbb", "fix": "http://github.test/o/r/pull/7", "note": "srun: error"}}
    body = render(rows, [row_key("jobs/eval.sbatch", "perlmutter")],
                  [("jobs/train.sbatch", "aurora"), ("jobs/eval.sbatch", "aurora"), ("jobs/eval.sbatch", "perlmutter")],
                  "http://github.test/o/r/blob")
    assert ("| `jobs/train.sbatch` | aurora | [`scripts/aurora/train.pbs`](http://github.test/o/r/blob/aaaaaaaaaaaa/scripts/aurora/train.pbs) "
            "| ❌ failed 2026-11-29 at `aaaaaaaaaaaa` · [log](https://ci.example/1) | 2026-11-28 at bbbbbbbbbbbb "
            "| [fix PR](http://github.test/o/r/pull/7) |") in body
    assert "| `jobs/eval.sbatch` | aurora | not yet |" in body and "- [ ] <!-- maple: port aurora --from jobs/eval.sbatch -->" in body
    assert "| `jobs/eval.sbatch` | perlmutter |" not in body  # ignored: only under Ignored, with its way back
    assert "- [ ] <!-- maple: unignore perlmutter jobs/eval.sbatch --> Port and verify" in body
    assert read_rows(body) == (rows, [row_key("jobs/eval.sbatch", "perlmutter")])


def test_only_newly_ticked_boxes_with_an_allowed_command_count():
    before = "- [x] <!-- maple: verify aurora --> a\n- [ ] <!-- maple: recreate aurora --> b\n- [ ] <!-- maple: approve x --> c"
    after = before.replace("[ ] <!-- maple: recreate", "[x] <!-- maple: recreate").replace("[ ] <!-- maple: approve", "[x] <!-- maple: approve")
    assert ticked(before, after) == ["recreate aurora"]  # verify was ticked already; approve is no box's command
    assert ticked("", "- [X] <!-- maple: verify aurora`; rm -rf --> x") == []  # text outside the allowlist is no box
    # A file name that would end the hidden comment, or split into two words, gets no box.
    assert box(("port", "aurora", "--from", "jobs/a-->b.sh"), "x") is None and box(("port", "aurora", "--from", "a b.sh"), "x") is None
    assert box(("port", "aurora", "--from", "jobs/a_b.sh"), "x") == "- [ ] <!-- maple: port aurora --from jobs/a_b.sh --> x"


def edited(webhook, issue, ticked_command, sender="Codertocat", sender_type="User"):
    """GitHub's recorded issues.edited payload, moved onto the dashboard with one box ticked by `sender`."""
    payload = webhook("issues", action="edited")
    after = issue["body"].replace(f"- [ ] <!-- maple: {ticked_command} -->", f"- [x] <!-- maple: {ticked_command} -->")
    assert after != issue["body"]
    payload["issue"].update(number=issue["number"], body=after, user={"login": "github-actions[bot]", "type": "Bot"})
    payload["changes"] = {"body": {"from": issue["body"]}}
    payload["sender"].update(login=sender, type=sender_type)
    payload["repository"]["default_branch"] = "main"
    return payload


def test_a_ticked_retry_box_reverifies_that_cluster_and_redraws_the_dashboard(fake, repo, webhook):
    nightly(fake, repo, {"perlmutter": "passed", "aurora": "failed"}, SETTINGS)
    [issue] = fake.issues
    fake.permissions["Codertocat"] = "write"
    plan = plan_event("issues", edited(webhook, issue, "verify aurora"), KNOWN)
    assert (plan.command.name, plan.command.clusters, plan.trigger, plan.report) == ("verify", ("aurora",), "dashboard", True)

    asked = []

    def verify(command, results, commit, skip, progress):
        asked.append(command.clusters)
        for c in results[0]["clusters"]:
            c.update(verification="passed")
        return results

    collected = [{"source": "scripts", "intent": {}, "clusters": [cluster_result("aurora")]}]
    run_plan(repo, plan, lambda *args: collected, verify=verify, report=SETTINGS)
    assert asked == [("aurora",)] and "❌" not in issue["body"] and "- [x]" not in issue["body"]
    assert fake.comments[-1]["issue"] == issue["number"]  # the answer, on the dashboard


def test_a_tick_by_someone_without_write_access_or_by_a_bot_runs_nothing(fake, repo, webhook):
    nightly(fake, repo, {"aurora": "failed"}, SETTINGS)
    [issue] = fake.issues
    assert plan_event("issues", edited(webhook, issue, "verify aurora", "dependabot[bot]", "Bot"), KNOWN).idle
    plan = plan_event("issues", edited(webhook, issue, "verify aurora", "reader"), KNOWN)
    checks = len(fake.check_runs)
    run_plan(repo, plan, lambda *args: [], report=SETTINGS)
    assert "Sorry @reader" in fake.comments[-1]["body"] and len(fake.check_runs) == checks
    person = edited(webhook, issue, "verify aurora")
    person["issue"]["user"] = {"login": "Codertocat", "type": "User"}  # a person's issue that copies the marker
    assert plan_event("issues", person, KNOWN).reason == "not maple-ci's dashboard"


def test_an_ignored_row_is_not_verified_and_gets_no_fix_pr(fake, repo, webhook):
    nightly(fake, repo, {"perlmutter": "passed", "aurora": "failed"}, SETTINGS)
    [issue] = fake.issues
    fake.permissions["Codertocat"] = "write"
    plan = plan_event("issues", edited(webhook, issue, "ignore aurora scripts/aurora/train.sh"), KNOWN)
    run_plan(repo, plan, lambda *args: [], settings=Config(), report=SETTINGS)
    assert "no longer verifies" in fake.comments[-1]["body"] and "### Ignored" in issue["body"]
    nightly(fake, repo, {"perlmutter": "passed", "aurora": "failed"}, SETTINGS)
    assert "❌" not in issue["body"] and [r["name"] for r in fake.check_runs[-1:]] == ["maple / perlmutter / scripts"]


def test_a_nightly_fix_pr_gets_the_configured_labels_and_reviewers(fake, repo):
    from test_github_maintainer import bot_pulls, fix_pipeline

    from maple_ci.github.config import PullRequests

    pipeline = fix_pipeline()
    settings = pipeline.config.model_copy(update={"pull_requests": PullRequests(labels=["hpc"], reviewers=["mona"])})
    broken = "#!/bin/bash\n#SBATCH -N 1\n\nsrun python train.py\n"
    fake.refs["heads/main"] = fake.commit_files({"scripts/perlmutter/train.sh": broken}, [fake.refs["heads/main"]], "ports")
    plan = plan_event("schedule", {"repository": {"default_branch": "main"}}, KNOWN, targets=("perlmutter",))
    collected = [{"source": "scripts/perlmutter/train.sh", "intent": {"framework": "pytorch"},
                  "clusters": [cluster_result("perlmutter") | {"content": broken, "verification": "pending"}]}]
    run_plan(repo, plan, lambda *args: collected, pipeline.verify, settings=settings)
    [pr] = bot_pulls(fake)
    assert (pr["head"], pr["labels"], pr["reviewers"]) == ("maple/port-fix-perlmutter", ["hpc"], ["mona"])


def speed(busbw, step, loss=None, miniapp_loss=None):
    """A cluster result's speed as the bot keeps it (verify.speed.Speed.model_dump(), the fields the trend reads)."""
    return {"busbw_gbps": busbw, "step_time_s": step, "loss": miniapp_loss,
            "program": {"loss": loss, "throughput": None} if loss else None}


def test_the_nightly_speed_trend_is_kept_per_cluster_and_capped():
    from maple_ci.github.trend import TREND_NIGHTS, nightly_trend, read_trend, render_trend, trend_marker

    trend = {}
    for night in range(TREND_NIGHTS + 2):
        day = f"2026-11-{night + 1:02d}"
        results = [{"source": "scripts", "intent": {}, "clusters": [
            cluster_result("perlmutter") | {"speed": speed(70.0 + night, 0.05)},
            cluster_result("aurora")]}]  # no figures (e.g. skipped): no night recorded
        trend = nightly_trend(trend, results, day)
    trend = nightly_trend(trend, [{"source": "s", "intent": {}, "clusters": [
        cluster_result("perlmutter") | {"speed": speed(10.0, 0.5, loss=2.5)}]}], "2026-11-16")  # a rerun replaces its day
    assert list(trend) == ["perlmutter"] and len(trend["perlmutter"]) == TREND_NIGHTS
    assert trend["perlmutter"][0][0] == "2026-11-03" and trend["perlmutter"][-1] == ["2026-11-16", 10.0, 0.5, 2.5, None]
    table = "\n".join(render_trend(trend))
    assert "| perlmutter | 2026-11-03 – 2026-11-16 | 72 → 73 →" in table and "→ 84 → 10 | 0.05 →" in table
    assert read_trend("body\n" + trend_marker(trend)) == trend
    assert read_trend("<!-- maple-ci trend bm90IGpzb24= -->") == {}  # damaged: dropped, not trusted


def test_the_dashboard_shows_the_nights_speed(fake, repo):
    plan = plan_event("schedule", {"repository": {"default_branch": "main"}}, KNOWN, targets=("perlmutter",))

    def verify(command, results, commit, skip, progress):
        for c in results[0]["clusters"]:
            c.update(verification="passed", speed=speed(77.5, 0.042, miniapp_loss=5.54))
        return results

    collected = [{"source": "scripts", "intent": {}, "clusters": [cluster_result("perlmutter") | {"verification": "pending"}]}]
    run_plan(repo, plan, lambda *args: collected, verify=verify, report=SETTINGS)
    [issue] = fake.issues
    assert "### Speed by cluster (nightly" in issue["body"] and "| perlmutter |" in issue["body"]
    assert "| 77.5 | 0.042 | 5.54 | — |" in issue["body"]
    assert read_rows(issue["body"])[0]  # the rows' marker is intact beside the trend's
