"""`maple init` and `maple config check` on a scratch repository holding the project's example
launch scripts: what they find, what they write, and that the bot accepts what they write."""

import shutil
from pathlib import Path

import pytest
import yaml

from maple_ci.cli import main
from maple_ci.github.config import load_config
from maple_ci.init_config import detect_scripts, propose_targets
from maple_ci.profiles import load_profiles

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
def checkout(tmp_path):
    """A repository with a Slurm and a PBS script in jobs/, a `.sh` with Slurm directives, a plain
    `.sh` and an earlier port under scripts/."""
    (tmp_path / "jobs").mkdir()
    shutil.copy(EXAMPLES / "perlmutter_torchrun_ddp.sbatch", tmp_path / "jobs" / "train.sbatch")
    shutil.copy(EXAMPLES / "polaris_mpiexec_ddp.pbs", tmp_path / "jobs" / "eval.pbs")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "sweep.sh").write_text("#!/bin/bash\n#SBATCH -N 1\nsrun python sweep.py\n")
    (tmp_path / "tools" / "lint.sh").write_text("#!/bin/bash\nruff check .\n")
    (tmp_path / "scripts" / "aurora").mkdir(parents=True)
    (tmp_path / "scripts" / "aurora" / "train.pbs").write_text("#PBS -l select=2\n")
    return tmp_path


def run(capsys, *argv):
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out + captured.err


def test_init_finds_the_launch_scripts_and_writes_a_config_the_bot_accepts(checkout, capsys):
    assert detect_scripts(checkout) == ["jobs/eval.pbs", "jobs/train.sbatch", "tools/sweep.sh"]  # not lint.sh, not the port
    code, output = run(capsys, "init", str(checkout))
    assert code == 0 and "found jobs/train.sbatch (written for perlmutter)" in output and "Allow GitHub Actions" in output
    config = load_config(checkout / ".github" / "maple.yml", load_profiles())
    assert config.sources == ["jobs/*.pbs", "jobs/*.sbatch", "tools/*.sh"]
    assert config.targets == ["frontier", "aurora"]  # perlmutter and polaris are the scripts' own: no NVIDIA target left
    push = yaml.safe_load((checkout / ".github" / "workflows" / "maple-push.yml").read_text())
    assert push[True]["push"]["paths"] == ["jobs/*.pbs", "jobs/*.sbatch", "tools/*.sh", ".github/maple.yml"]  # YAML 1.1: `on` is True
    assert "default_branch" in push["jobs"]["maple"]["if"] and "branches" not in push[True]["push"]
    assert run(capsys, "config", "check", "--root", str(checkout)) == (0, f"{checkout / '.github/maple.yml'}: ok\n")

    code, output = run(capsys, "init", str(checkout))
    assert code == 2 and "already exist" in " ".join(output.split())  # a second init overwrites nothing
    assert run(capsys, "init", str(checkout), "--force")[0] == 0


def test_targets_are_one_per_gpu_vendor_not_the_scripts_own():
    known = load_profiles()
    assert propose_targets([], known) == ["perlmutter", "frontier", "aurora"]
    assert propose_targets(["perlmutter", "frontier"], known) == ["polaris", "lumi", "aurora"]


@pytest.mark.parametrize("text, message", [
    ("targets: [perlmutter]\nsources: ['jobs/*.sbatch']\npull_requests: {limit: -1}\n", "`pull_requests.limit`"),
    ("targets: [perlmutter]\nsources: ['jobs/*.sbatch']\nschedule: {interval: weekly, day: funday}\n", "`schedule.day`"),
    ("targets: [perlmuter]\nsources: ['jobs/*.sbatch']\n", "unknown cluster(s) perlmuter"),
    ("targets: [perlmutter]\nsources: ['job/*.sbatch']\n", "`sources` glob 'job/*.sbatch' matches no file"),
    ("targets: []\nsources: ['jobs/*.sbatch']\n", "`targets` is empty"),
])
def test_config_check_names_each_problem(checkout, capsys, text, message):
    (checkout / ".github").mkdir()
    (checkout / ".github" / "maple.yml").write_text(text)
    code, output = run(capsys, "config", "check", "--root", str(checkout))
    assert code == 2 and message in " ".join(output.split())


def test_config_check_without_a_file_says_how_to_make_one(tmp_path, capsys):
    code, output = run(capsys, "config", "check", "--root", str(tmp_path))
    assert code == 2 and "`maple init` writes one" in output


def test_init_follows_no_symlink_the_checkout_planted(checkout, tmp_path_factory, capsys):
    """A cloned repository's `.github` pointing elsewhere must not make `maple init` write there."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (checkout / ".github").symlink_to(elsewhere, target_is_directory=True)
    code, output = run(capsys, "init", str(checkout))
    assert code != 0 and "symlink" in output
    assert list(elsewhere.iterdir()) == []
