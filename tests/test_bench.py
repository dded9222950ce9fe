"""The benchmark suite itself: its cases, its scoring, and a run of a subset (issue 6: in CI)."""

import collections
import os
import sys

import pytest

from maple_ci.bench import expand_cases, generation_failures, load_cases, run_accuracy, run_verified, suite_path
from maple_ci.errors import MapleError
from maple_ci.extract import extract
from maple_ci.port import port_intent
from maple_ci.profiles import get_profile


@pytest.fixture(autouse=True)
def data_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path_factory.getbasetemp() / "maple-data"))


def test_suite_has_600_cases_over_every_target_style_and_phrasing():
    import yaml

    suite = yaml.safe_load(suite_path().read_text())
    cases = expand_cases(suite)
    assert len(cases) >= 600
    assert set(collections.Counter(c.target for c in cases)) == set(suite["targets"])
    assert {c.id.split("/")[0] for c in cases} == set(suite["styles"]) | {f"request{i}" for i in range(len(suite["phrasings"]))}
    script = next(c for c in cases if c.id.startswith("frontier_srun/") and c.id.endswith("/4n->" + c.target))
    assert script.expect["world_size"] == 32 and "srun -N4 -n32" in script.text


def test_a_wrong_generated_script_is_caught(tmp_path):
    case = next(c for c in load_cases() if c.id.startswith("delta_srun_torchrun/gpt2/2n")).model_copy(update={"target": "delta"})
    result = port_intent(extract(case.text), [case.target], "case", tmp_path)[0]
    assert generation_failures(case, result) == []
    broken = result.model_copy(update={"script": result.script.replace("--nodes=2", "--nodes=3").replace("train_gpt2.py", "x.py")})
    problems = generation_failures(case, broken)
    assert any("nodes 3 != 2" in p for p in problems)
    assert any("entrypoint" in p for p in problems)


def test_accuracy_subset():
    report = run_accuracy(load_cases(80))
    assert report["cases"] == 80
    assert set(report["extraction"]) >= {"nodes", "gpus_per_node", "launcher", "framework", "entrypoint"}
    for failure in report["failures"]:  # every failure says why, so it can be fixed or listed as a limit
        assert failure["problems"]
    assert report["generation"]["accuracy"] >= 0.95, report["failures"]


@pytest.mark.cluster
def test_verified_subset_runs_generated_scripts_on_two_nodes(slurm_cluster, monkeypatch):
    monkeypatch.setenv("BASH_ENV", slurm_cluster.job_env["BASH_ENV"])
    report = run_verified(load_cases(), 2, timeout=240)
    assert report["total"] == 2
    assert len({run["case"].split("->")[1] for run in report["runs"]}) == 2  # two different targets
    for run in report["runs"]:  # every node filled: 2 x the target's devices per node
        assert run["ok"] and run["world_size"] == 2 * get_profile(run["case"].split("->")[1]).devices_per_node, run


def test_a_child_process_is_timed_with_its_own_peak_memory():
    from maple_ci.bench import _run_process

    parent = b"1" * (500 << 20)  # a big parent: Linux hands its high-water RSS to a child it forks
    seconds, peak = _run_process([sys.executable, "-c", "x = b'1' * (200 << 20)"], dict(os.environ))
    assert seconds > 0 and 200 <= peak < 400 and len(parent)  # this child's 200 MiB, not the parent's 500+
    with pytest.raises(MapleError, match="exited 3: no luck"):
        _run_process([sys.executable, "-c", "import sys; print('no luck', file=sys.stderr); sys.exit(3)"], dict(os.environ))


def test_latency_suite_times_each_command_cold_and_warm(monkeypatch):
    from maple_ci import bench

    monkeypatch.setattr(bench, "PROCESS_COMMANDS", {"extract": ["extract", "{example}"]})
    report = bench.process_latency(runs=1)
    figures = report["commands"]["extract"]
    assert figures["argv"][0] == "extract" and figures["argv"][1].endswith("perlmutter_torchrun_ddp.sbatch")
    for label in ("cold", "warm"):
        assert figures[label]["median_s"] > 0 and figures[label]["peak_rss_mib"] > 10
    assert report["runs"] == 1 and len(report["load"]) == 2
