"""On the local Slurm test cluster (tests/cluster/): `maple cluster discover` writes a profile from
the cluster's own answers, a port to it passes the verification run there submitted as written
(adapt=False: no site directive dropped), and `maple cluster check` names drift in an edited copy.

The one change to the generated script is its MASTER_PORT, for a free one: both test nodes are one
machine shared with other runs (conftest's `port` fixture does the same)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from maple_ci.verify.slurm import verify_slurm

ROOT = Path(__file__).resolve().parents[1]
SITE_ENV = "/opt/maple-test/site-env.sh"


def maple(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "maple_ci", *args], capture_output=True, text=True, env=env,
                          timeout=600, cwd=ROOT)


@pytest.fixture(scope="module")
def login_env(slurm_cluster, tmp_path_factory):
    """A login shell's environment (Lmod's LMOD_CMD and MODULEPATH from the site's startup file), with
    maple's caches and a user profile folder of its own."""
    shown = subprocess.run(["bash", "-c", f'. {SITE_ENV} && printf "%s\\n%s" "$LMOD_CMD" "$MODULEPATH"'],
                           capture_output=True, text=True, check=True)
    lmod, modulepath = shown.stdout.split("\n")
    base = tmp_path_factory.mktemp("discover")
    return {**slurm_cluster.job_env, "LMOD_CMD": lmod, "MODULEPATH": modulepath, "PYTHONPATH": str(ROOT),
            "MAPLE_DATA_DIR": str(base / "data"), "MAPLE_CLUSTERS_DIR": str(base / "clusters")}


@pytest.fixture(scope="module")
def discovered(login_env) -> Path:
    path = Path(login_env["MAPLE_CLUSTERS_DIR"]) / "maple-local.yaml"
    done = maple("cluster", "discover", "--name", "maple-local", "--out", str(path), env=login_env)
    assert done.returncode == 0, done.stderr
    return path


@pytest.mark.cluster
def test_a_port_to_the_discovered_profile_runs_on_the_cluster_as_written(discovered, login_env, slurm_cluster,
                                                                         tmp_path, master_port):
    text = discovered.read_text()
    assert "queues:  # `scontrol show partition --oneliner`" in text and "- pytorch" in text
    done = maple("port", str(ROOT / "examples" / "perlmutter_torchrun_ddp.sbatch"), "--to", "maple-local",
                 "--out", str(tmp_path / "scripts"), env=login_env)
    assert done.returncode == 0, done.stdout + done.stderr
    [script] = (tmp_path / "scripts" / "maple-local").iterdir()
    body, count = re.subn(r"(?m)^export MASTER_PORT=\d+$", f"export MASTER_PORT={master_port}", script.read_text())
    assert count == 1
    assert "#SBATCH --partition=gpu" in body and "module load pytorch" in body
    script.write_text(body)
    result = verify_slurm(script, miniapp="ddp", adapt=False, timeout=600, env=slurm_cluster.job_env, workdir=tmp_path)
    assert result.ok and result.state == "COMPLETED", result.log[-3000:]
    assert result.result["world_size"] == 8 and result.result["hostnames"] == ["n1", "n2"]


@pytest.mark.cluster
def test_check_reports_drift_in_a_profile_edited_to_disagree_with_the_cluster(discovered, login_env):
    clean = maple("cluster", "check", "maple-local", env=login_env)
    assert clean.returncode == 0 and "no drift" in clean.stdout, clean.stdout + clean.stderr
    edited = discovered.parent / "maple-drifted.yaml"
    text = discovered.read_text().replace("maple-local", "maple-drifted")
    text = text.replace("- name: debug", "- name: debug-old").replace("- pytorch\n", "- pytorch/0.1-gone\n")
    edited.write_text(text)
    try:
        drifted = maple("cluster", "check", "maple-drifted", "--json", env=login_env)
    finally:
        edited.unlink()
    assert drifted.returncode == 1, drifted.stdout + drifted.stderr
    report = drifted.stdout
    assert "queue debug-old: not among" in report and "module pytorch/0.1-gone is not in" in report


def test_discover_refuses_to_overwrite_a_file(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("mine\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = maple("cluster", "discover", "--name", "x", "--out", str(path),
                 "--from", str(ROOT / "tests" / "data" / "discover" / "maple-test"), env=env)
    assert done.returncode == 2 and "--force" in done.stderr and path.read_text() == "mine\n"


def test_check_on_a_shipped_profile_from_recorded_outputs_names_the_difference():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = maple("cluster", "check", "polaris", "--json", "--from", str(ROOT / "tests" / "data" / "discover" / "polaris"), env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["drift"] == ["the scheduler's CPUs per node: the profile says 32, `pbsnodes -a` says 64"]
    assert "`qstat -Qf`" in report["not_checked"]  # queues were not recorded: not checked, not drift
