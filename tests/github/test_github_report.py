"""The nightly "Portability report" issue against the stateful fake: opened on the first
regression, updated while anything fails, closed when everything passes."""

from scenarios import nightly

from maple_ci.github.config import Schedule
from maple_ci.github.report import MARKER, render_report

SETTINGS = Schedule(report_issue_title="Portability report", labels=["maple-ci"])


def test_report_issue_opens_on_regression_updates_and_closes(fake, repo):
    assert nightly(fake, repo, {"perlmutter": "passed", "aurora": "passed"}, SETTINGS).results
    assert fake.issues == []  # all pass and no report open: nothing to say

    nightly(fake, repo, {"perlmutter": "passed", "aurora": "failed"}, SETTINGS)
    [issue] = fake.issues
    assert (issue["title"], issue["labels"], issue["state"]) == ("Portability report", ["maple-ci"], "open")
    assert "| `train` | [❌ fail]" in issue["body"] and "aurora run failed" in issue["body"]

    nightly(fake, repo, {"perlmutter": "failed", "aurora": "failed"}, SETTINGS)
    assert len(fake.issues) == 1 and issue["body"].count("❌ fail") == 2  # the same issue, updated

    nightly(fake, repo, {"perlmutter": "passed", "aurora": "passed"}, SETTINGS)
    assert (len(fake.issues), issue["state"], issue["state_reason"]) == (1, "closed", "completed")
    assert issue["body"].count("✅ pass") == 2 and "run failed" not in issue["body"]

    nightly(fake, repo, {"perlmutter": "failed", "aurora": "passed"}, SETTINGS)
    assert [i["state"] for i in fake.issues] == ["closed", "open"]  # a new regression, a new issue
    assert len(fake.check_runs) == 10  # a check run per cluster each night, on main's head


def test_an_issue_with_the_same_title_written_by_a_person_is_left_alone(fake, repo):
    fake.issues.append({"number": 1, "title": "Portability report", "body": "my notes", "state": "open", "labels": ["maple-ci"]})
    nightly(fake, repo, {"aurora": "failed"}, SETTINGS)
    assert [i["body"] for i in fake.issues][0] == "my notes" and fake.issues[1]["body"].startswith(MARKER)


def test_report_matrix_links_each_script_and_its_log():
    results = [{"source": "scripts", "intent": {}, "clusters": [
        {"cluster": "aurora", "path": "scripts/aurora/train.pbs", "content": "", "template": "", "checks": [],
         "verification": "failed", "log_url": "https://ci.example/1", "suggestions": []},
        {"cluster": "perlmutter", "path": "scripts/perlmutter/train.sbatch", "content": "", "template": "", "checks": [],
         "verification": "skipped", "log_url": None, "suggestions": []},
        {"cluster": "perlmutter", "path": "scripts/perlmutter/eval.sbatch", "content": "", "template": "", "checks": [],
         "verification": "passed", "log_url": None, "suggestions": []},
    ]}]
    body = render_report(results, "http://github.test/o/r/blob", "a" * 40)
    assert "| Script | aurora | perlmutter |" in body
    assert f"| `eval` | — | [✅ pass](http://github.test/o/r/blob/{'a' * 40}/scripts/perlmutter/eval.sbatch) |" in body
    assert (f"| `train` | [❌ fail](http://github.test/o/r/blob/{'a' * 40}/scripts/aurora/train.pbs) · [log](https://ci.example/1) "
            f"| [⏭️ not run](http://github.test/o/r/blob/{'a' * 40}/scripts/perlmutter/train.sbatch) |") in body
