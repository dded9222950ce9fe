""".github/maple.yml: defaults, overrides from the action's inputs, and messages that say what to fix."""

import pytest

from maple_ci.errors import MapleError
from maple_ci.github.config import load_config

KNOWN = ("perlmutter", "aurora", "polaris")


def write(tmp_path, text):
    path = tmp_path / "maple.yml"
    path.write_text(text)
    return path


def test_a_full_config(tmp_path):
    config = load_config(write(tmp_path, """
targets: [perlmutter, aurora]
sources: ["jobs/*.sbatch", "*.pbs"]
output: ported/
verification: {default: none, perlmutter: jacamar}
schedule: {report_issue_title: Nightly ports, labels: [hpc]}
"""), KNOWN)
    assert config.targets == ["perlmutter", "aurora"] and config.output == "ported"
    assert (config.backend("perlmutter"), config.backend("aurora")) == ("jacamar", "none")
    assert (config.schedule.report_issue_title, config.schedule.labels) == ("Nightly ports", ["hpc"])


def test_no_file_means_defaults_and_inputs_override_the_file(tmp_path):
    config = load_config(tmp_path / "absent.yml", KNOWN)
    assert (config.targets, config.output, config.backend("aurora"), config.schedule.report_issue_title) == \
        ([], "scripts", "none", "Portability report")
    path = write(tmp_path, "targets: [polaris]\nverification: {aurora: slurm}\n")
    config = load_config(path, KNOWN, {"MAPLE_TARGETS": "perlmutter, aurora", "MAPLE_BACKEND": "jacamar"})
    assert config.targets == ["perlmutter", "aurora"]
    assert (config.backend("aurora"), config.backend("perlmutter")) == ("slurm", "jacamar")  # per cluster still wins


@pytest.mark.parametrize("text, message", [
    ("targets: [perlmutter\n", "is not valid YAML"),
    ("- perlmutter\n", "must be a mapping"),
    ("target: [perlmutter]\n", "`target`: Extra inputs are not permitted"),
    ("verification: {aurora: ssh}\n", "`verification.aurora`: Input should be 'none', 'jacamar', 'slurm' or 'local'"),
    ("sources: ['../other/*.sh']\n", "`sources`: Value error, '../other/*.sh' must be a relative path inside the repository"),
    ("output: /tmp\n", "`output`"),
    ("schedule: {labels: maple}\n", "`schedule.labels`: Input should be a valid list"),
    ("targets: [perlmutter, mars]\n", "unknown cluster(s) mars in `targets`"),
])
def test_invalid_config_names_the_file_and_the_key(tmp_path, text, message):
    with pytest.raises(MapleError) as error:
        load_config(write(tmp_path, text), KNOWN)
    assert str(error.value).startswith(str(tmp_path / "maple.yml")) and message in str(error.value)


def test_the_schedule_says_which_nights_verify_and_a_dispatch_runs_any_day(fake, repo):
    """Dependabot-like `schedule.interval`/`day`: the nightly cron wakes the bot, which verifies only on
    the days named; the fake GitHub (tests/github/fake_github.py) stands in for github.com."""
    from datetime import date, datetime, timezone

    from maple_ci.github.bot import run_plan
    from maple_ci.github.config import WEEKDAYS, Config, Schedule
    from maple_ci.github.events import plan_event

    assert Schedule(interval="weekly", day="sunday").due(date(2026, 11, 29)) and not Schedule(interval="weekly").due(date(2026, 11, 29))
    assert Schedule(interval="monthly").due(date(2026, 12, 1)) and not Schedule(interval="monthly").due(date(2026, 11, 29))
    today = datetime.now(timezone.utc).date()
    other_day = WEEKDAYS[(today.weekday() + 1) % 7]
    config = Config(targets=["aurora"], schedule=Schedule(interval="weekly", day=other_day))
    ran = []
    night = plan_event("schedule", {"repository": {"default_branch": "main"}}, KNOWN, targets=("aurora",))
    run_plan(repo, night, lambda *args: ran.append(args) or [], settings=config)
    assert ran == [] and fake.requests == []  # not its day: nothing asked of GitHub
    dispatched = plan_event("workflow_dispatch", {"repository": {"default_branch": "main"}, "ref": "refs/heads/main", "inputs": {}},
                            KNOWN, targets=("aurora",))
    run_plan(repo, dispatched, lambda *args: ran.append(args) or [], settings=config)
    assert len(ran) == 1  # a person's run: whatever the day
