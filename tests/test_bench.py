"""The benchmark suite itself: its cases, its scoring, and a run of a subset (issue 6: in CI)."""

import collections
import os
import sys

import pytest

from maple_ci.bench import expand_cases, generation_failures, load_cases, run_accuracy, run_verified, suite_path
from maple_ci.errors import MapleError
from maple_ci.extract import extract
from maple_ci.port import port_intent
from maple_ci.profiles import get_profile, load_profiles


@pytest.fixture(autouse=True)
def data_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path_factory.getbasetemp() / "maple-data"))


def test_suite_has_600_cases_over_every_target_style_and_phrasing():
    import yaml

    suite = yaml.safe_load(suite_path().read_text())
    cases = expand_cases(suite)
    assert len(cases) >= 600
    assert set(collections.Counter(c.target for c in cases)) == set(load_profiles())  # every cluster
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
    from maple_ci.bench_latency import _run_process

    parent = b"1" * (500 << 20)  # a big parent: Linux hands its high-water RSS to a child it forks
    seconds, peak, cpu = _run_process([sys.executable, "-c", "x = b'1' * (200 << 20)"], dict(os.environ))
    assert seconds > 0 and 200 <= peak < 400 and len(parent)  # this child's 200 MiB, not the parent's 500+
    assert 0 < cpu <= seconds * 2  # the child's own CPU time (one thread, with bash's a little more)
    with pytest.raises(MapleError, match="exited 3: no luck"):
        _run_process([sys.executable, "-c", "import sys; print('no luck', file=sys.stderr); sys.exit(3)"], dict(os.environ))


def test_latency_suite_times_each_command_cold_and_warm(monkeypatch):
    from maple_ci import bench_latency

    monkeypatch.setattr(bench_latency, "PROCESS_COMMANDS", {"extract": ["extract", "{example}"]})
    report = bench_latency.process_latency(runs=1)
    figures = report["commands"]["extract"]
    assert figures["argv"][0] == "extract" and figures["argv"][1].endswith("perlmutter_torchrun_ddp.sbatch")
    for label in ("cold", "warm"):
        assert figures[label]["median_s"] > 0 and figures[label]["peak_rss_mib"] > 10 and figures[label]["cpu_median_s"] > 0
    assert report["runs"] == 1 and len(report["load"]) == 2
    assert report["trace_cost"] == {}  # no traced port among the commands timed


def test_the_trace_gates_cost_is_the_traced_port_less_the_static_one():
    from maple_ci.bench_latency import trace_cost

    def warm(seconds, cpu):
        return {"warm": {"median_s": seconds, "cpu_median_s": cpu}}
    figures = {"port, 1 cluster, static checks": warm(0.4, 0.3), "port, 1 cluster, traced": warm(2.0, 0.6),
               "port, all clusters, static checks": warm(1.5, 1.2), "port, all clusters, traced": warm(9.5, 4.2),
               "extract": warm(0.1, 0.1)}
    cost = trace_cost(figures)
    assert cost["1 cluster"] == pytest.approx({"wall_s": 1.6, "cpu_s": 0.3})
    assert cost["all clusters"] == pytest.approx({"wall_s": 8.0, "cpu_s": 3.0})


# --- the golden suite: the centers' own published scripts (issue 16, item 8) ---

def test_golden_scripts_name_their_source_and_show_the_facts_written_for_them():
    from maple_ci.bench_golden import facts_not_shown, load_golden

    cases = load_golden()
    assert len(cases) >= 30
    for case in cases:
        get_profile(case["cluster"])  # a profiled cluster
        assert case["url"].startswith("https://") and case["repository_file"].startswith("https://github.com/")
        assert case["read_on"] == "2026-11-25" and case["kind"] in ("multi-node", "deepspeed", "single-node", "single-process")
        assert case["facts"] and all({"id", "fact", "pattern"} <= set(fact) for fact in case["facts"])
    assert facts_not_shown(cases) == []  # every fact a YAML lists is in its own script's live lines


def test_a_needed_fact_is_one_every_script_of_the_kind_shows():
    """Polaris's non-container multi-node scripts all activate ALCF's conda; its container ones
    take Python from the image: conda is needed for a port of a bare job, not of a container job."""
    from maple_ci.bench_golden import load_golden, target_facts

    cases = load_golden()
    bare = {f["id"]: f["needed"] for f in target_facts(cases, "polaris", "multi-node")}
    boxed = {f["id"]: f["needed"] for f in target_facts(cases, "polaris", "multi-node", frozenset({"container"}))}
    assert bare["conda"] and not boxed["conda"]
    assert "apptainer" in boxed and "apptainer" not in bare
    assert not bare["place-scatter"]  # the center's data marks only what a job cannot do without
    assert not bare["mpiexec-ppn"]  # ALCF's 2022 aprun script shows no mpiexec: not every Polaris job needs it
    # TACC's scripts start torchrun per node: that launcher is a fact for a port that does too
    assert "torchrun" not in {f["id"] for f in target_facts(cases, "vista", "multi-node")}
    assert {"torchrun": True}.items() <= {f["id"]: f["needed"] for f in
                                          target_facts(cases, "vista", "multi-node", frozenset({"per-node"}))}.items()


def test_golden_verdicts_follow_the_stated_rules():
    from maple_ci.bench_golden import verdict
    from maple_ci.port import PortResult
    from maple_ci.verify.static import Check

    plain = "#!/bin/bash\n# Job: 1 node(s)\nsrun python train.py\n"
    ok = [Check(name="bash-syntax", ok=True, message="")]
    result = lambda script, checks=ok: PortResult(cluster="perlmutter", status="ok", script=script, checks=checks)
    assert verdict(result(plain), [], []) == "as-is"
    assert verdict(result(plain.replace("# Job", "#SBATCH --account=<ACCOUNT>\n# Job")), [], []) == "edit"
    assert verdict(result("# Note: give the value yourself\n" + plain), [], []) == "edit"
    assert verdict(result(plain), ["readback:program: the port runs 'x.py'"], []) == "wrong"
    assert verdict(result(plain), [], ["python-env"]) == "wrong"
    assert verdict(result(plain, [Check(name="bash-syntax", ok=False, message="")]), [], []) == "wrong"
    assert verdict(None, [], []) == "refused"


def test_a_golden_port_never_passes_while_its_read_back_differs(tmp_path, monkeypatch):
    """A template library whose launch line drops the program's arguments: every written port of
    the golden scripts fails maple's own read-back check (none is 'ok' and wrong), and the suite
    names the lost arguments."""
    import shutil

    from maple_ci.bench_golden import load_golden, run_golden
    from maple_ci.paths import templates_dir

    library = shutil.copytree(templates_dir(), tmp_path / "templates")
    launch = library / "launch" / "_launch.j2"
    dropped = launch.read_text().replace("{% for word in args %} {{ word|arg(arrays) }}{% endfor %}", "")
    assert dropped != launch.read_text()  # the line this test removes is still the template's
    launch.write_text(dropped)
    monkeypatch.setenv("MAPLE_TEMPLATES_DIR", str(library))
    cases = [c for c in load_golden() if c["cluster"] in ("perlmutter", "polaris") and c["kind"] == "multi-node"]
    report = run_golden(cases, tmp_path / "ports")
    with_args = [r for r in report["rows"] if r["verdict"] != "refused" and
                 any(f.startswith("readback:arguments") for f in r["gate_failures"])]
    assert len(with_args) >= 5 and all(r["verdict"] == "wrong" and not r["maple_ok"] for r in with_args)
    assert report["silent"] == 0
