"""Session fixtures shared by all tests: the local Slurm test cluster (tests/cluster/)."""

import os
import re
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from venvs import nested_venv

CLUSTER_DIR = Path(__file__).parent / "cluster"
# cluster/site-env.sh as setup.sh installs it: root-owned in a root-only folder, as a site's is
SITE_ENV = "/opt/maple-test/site-env.sh"
LOG_DIR = Path("/var/log/maple-slurm")
NODES = ("n1", "n2")
# Node states in which a node takes jobs; anything else (down, drain, unknown) is not up yet.
UP_STATES = {"idle", "mix", "mixed", "alloc", "allocated"}
START_TIMEOUT = 60


def pytest_configure(config):
    config.addinivalue_line("markers", "cluster: needs the local Slurm test cluster (started on demand, as root)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def module_data_dir(tmp_path_factory):
    """MAPLE_DATA_DIR in a fresh folder for one test module: its LanceDB tables (known errors, the
    centers' documentation) are built once there, away from the user's cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MAPLE_DATA_DIR", str(tmp_path_factory.mktemp("maple-data")))
        yield


@pytest.fixture
def master_port() -> int:
    """A TCP port free right now, for a job's rendezvous: other runs on this machine (earlier tests,
    other people's) may hold torch's default 29500."""
    return _free_port()


@pytest.fixture
def free_port():
    """master_port as a function, for a test that runs several jobs at once."""
    return _free_port


@pytest.fixture(scope="session")
def port(tmp_path_factory):
    """port(cluster, master_port=None, **overrides): the script maple-ci's own pipeline (extract ->
    port_intent) generates for cluster from the shipped Perlmutter example, with JobIntent overrides
    (framework, strategy, nodes, entrypoint). master_port replaces the generated MASTER_PORT: the test
    cluster's nodes are one machine, so concurrent jobs (and other runs) would share it."""
    from maple_ci.extract import extract, load_source
    from maple_ci.port import apply_overrides, port_intent

    source = Path(__file__).resolve().parents[1] / "examples" / "perlmutter_torchrun_ddp.sbatch"
    name, text = load_source(str(source))
    intent = extract(text, name, source.parent)
    data_dir, out = tmp_path_factory.mktemp("maple-data"), tmp_path_factory.mktemp("ported")
    # Targets whose center has no PyTorch activate the user's environment (--python-env): a real
    # venv over the torch of the Python running the tests (venvs.nested_venv); the test cluster's
    # conda stand-in accepts it as a conda env.
    venv = tmp_path_factory.mktemp("python-env") / "venv"
    nested_venv(venv)

    def generate(cluster: str, master_port: int | None = None, **overrides) -> str:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("MAPLE_DATA_DIR", str(data_dir))  # the template index is built once, away from the user's
            [result] = port_intent(apply_overrides(intent, **overrides), [cluster], name, out,
                                   python_envs={"default": str(venv)})
        assert result.status == "ok", result
        if master_port is None:
            return result.script
        script, count = re.subn(r"(?m)^export MASTER_PORT=\d+$", f"export MASTER_PORT={master_port}", result.script)
        assert count == 1, "the generated script no longer sets MASTER_PORT once"
        return script

    return generate


@dataclass(frozen=True)
class SlurmCluster:
    default_partition: str
    partitions: tuple[str, ...]
    nodes: int
    gpus_per_node: int
    # The environment jobs start from: this one plus BASH_ENV=SITE_ENV (cluster/site-env.sh), which
    # gives them Lmod's `module` and the conda stand-in as a site's login environment would.
    job_env: dict


def _run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def _controller_up() -> bool:
    try:
        ping = _run("scontrol", "ping")
    except FileNotFoundError:  # Slurm is not even installed
        return False
    return ping.returncode == 0 and "UP" in ping.stdout


def _logs() -> str:
    return "\n".join(f"--- {log}\n{log.read_text(errors='replace')[-3000:]}" for log in sorted(LOG_DIR.glob("*.log")))


@pytest.fixture(scope="session")
def slurm_cluster():
    """The two-node test cluster, started with tests/cluster/setup.sh unless it already runs, and
    stopped at the end of the session only if this session started it. A cluster that cannot start
    fails the tests that need it: a skipped cluster test would prove nothing."""
    started = not _controller_up()
    if os.geteuid() == 0:
        # Also when the cluster is up: setup.sh is idempotent and refreshes the modulefiles.
        setup = _run("bash", str(CLUSTER_DIR / "setup.sh"))
        if setup.returncode != 0:
            pytest.fail(f"tests/cluster/setup.sh failed (exit {setup.returncode}):\n{setup.stdout}\n{setup.stderr}")
    elif started:
        pytest.fail("the Slurm test cluster is not running and only root can start it (tests/cluster/setup.sh)")

    deadline = time.monotonic() + START_TIMEOUT
    while True:
        shown = _run("sinfo", "--noheader", "--Node", "--format=%N %t")
        states = dict(line.split() for line in shown.stdout.splitlines())
        if all(states.get(node) in UP_STATES for node in NODES):
            break
        if time.monotonic() > deadline:
            pytest.fail(f"test cluster nodes not up after {START_TIMEOUT} s: {states or shown.stderr}\n{_logs()}")
        time.sleep(1)

    partitions = _run("sinfo", "--noheader", "--format=%P").stdout.split()
    gres = _run("sinfo", "--noheader", "--Node", "--format=%G").stdout.split()[0]  # "gpu:4"
    yield SlurmCluster(default_partition=next(p.rstrip("*") for p in partitions if p.endswith("*")),
                       partitions=tuple(p.rstrip("*") for p in partitions), nodes=len(NODES),
                       gpus_per_node=int(gres.split(":")[-1]),
                       job_env={**os.environ, "BASH_ENV": SITE_ENV})
    if started:
        _run("bash", str(CLUSTER_DIR / "stop.sh"))
