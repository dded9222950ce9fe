"""`maple bench --suite debug`: the case schema (benchmarks/debug/README.md), how a proposed fix
is compared with the thread's, and the scores."""

import shutil

import pytest
import yaml

from maple_ci.bench_debug import debug_dir, load_classes, load_debug_cases, meets, run_debug
from maple_ci.debug import load_kb
from maple_ci.errors import MapleError

CASE = {
    "id": "acct-missing", "source_url": "https://example.org/t/1", "read_on": "2026-11-25", "cluster": "unknown",
    "scheduler": "slurm", "script": "#!/bin/bash\n#SBATCH -N 1\n#SBATCH -p gpu\nsrun python train.py\n",
    "log": "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified\n",
    "first_error": "Invalid account or account/partition combination specified", "cause": "no account",
    "class": "slurm_invalid_account", "fix_kind": "site_value", "accepted_fix": "set the account",
    "expected": {"edits": [{"op": "set_directive", "name": "-A", "value": "*"}], "advice_kind": "site_value"},
}  # fmt: skip
LIMIT = CASE | {
    "id": "job-limit", "script": "#!/bin/bash\n#SBATCH -A p1\nsrun python train.py\n", "class": "job_limit_policy",
    "log": "sbatch: error: QOSMaxSubmitJobPerUserLimit\nsbatch: error: Batch job submission failed: Job violates accounting/QOS policy\n",
    "first_error": "sbatch: error: QOSMaxSubmitJobPerUserLimit", "fix_kind": "policy",
    "expected": {"edits": [], "advice_kind": "policy"},
}  # fmt: skip


@pytest.fixture
def bench_dir(tmp_path):
    shutil.copy(debug_dir() / "classes.yaml", tmp_path / "classes.yaml")
    (tmp_path / "cases").mkdir()
    return tmp_path


def write(root, case):
    (root / "cases" / f"{case['id']}.yaml").write_text(yaml.safe_dump(case, sort_keys=False))


def test_the_collected_cases_follow_the_schema():
    cases = load_debug_cases()
    assert len({c.id for c in cases}) == len(cases) >= 1


def test_every_cause_a_fix_names_is_a_class():
    causes = {fix.cause for e in load_kb() for fix in e.alternatives if fix.cause}
    assert causes and causes <= set(load_classes())


@pytest.mark.parametrize("broken, field", [
    ({"fix_kind": "script", "expected": {"edits": [], "advice_kind": None}}, "needs expected.edits"),
    ({"first_error": "not in the log"}, "first_error"),
    ({"expected": {"edits": [{"op": "set_directive", "nme": "--account"}], "advice_kind": "site_value"}}, "nme"),
    ({"class": "no_such_class"}, "classes.yaml"),
    ({"source_url": "http://example.org"}, "source_url"),
])  # fmt: skip
def test_a_malformed_case_is_refused_with_its_file_and_field(bench_dir, broken, field):
    write(bench_dir, CASE | broken)
    with pytest.raises(MapleError, match=field) as raised:
        load_debug_cases(bench_dir)
    assert "acct-missing.yaml" in str(raised.value)


def test_a_proposed_edit_meets_the_threads_by_option_not_by_spelling():
    expected = [{"op": "set_directive", "name": "-A", "value": "*"}]
    assert meets(expected, [{"op": "set_directive", "name": "--account", "value": "<account>"}])
    assert not meets(expected, [{"op": "set_directive", "name": "--qos", "value": "x"}])
    # The scheduler registry decides spellings: PBS's "-l walltime" is its walltime, and a PBS
    # case's -N (the job name) is not Slurm's --nodes.
    walltime = [{"op": "set_directive", "name": "-l walltime", "value": "*"}]
    assert meets(walltime, [{"op": "set_directive", "name": "-lwalltime", "value": "01:00:00"}], scheduler="pbs")
    assert meets([{"op": "remove_directive", "name": "-N"}], [{"op": "remove_directive", "name": "--nodes"}], scheduler="slurm")
    assert not meets([{"op": "remove_directive", "name": "-N"}], [{"op": "remove_directive", "name": "--nodes"}], scheduler="pbs")
    quoted = [{"op": "export_env", "name": "NCCL_NET", "value": "AWS Libfabric"}]
    assert meets(quoted, [{"op": "export_env", "name": "NCCL_NET", "value": "'AWS Libfabric'"}])
    # An equivalent edit: not the same op, the same script.
    script = "#!/bin/bash\nsrun torchrun train.py\n"
    replace = [{"op": "replace_text", "old": "srun torchrun", "new": "srun python3 -m torch.distributed.run"}]
    other = [{"op": "replace_text", "old": "torchrun", "new": "python3 -m torch.distributed.run"}]
    assert meets(replace, other, script, "#!/bin/bash\nsrun python3 -m torch.distributed.run train.py\n")
    assert not meets(replace, other, script, "#!/bin/bash\nsrun python -m torch.distributed.run train.py\n")
    # The words of a replace_text's new are tokens inside shell words, not whole shell words.
    endpoint = [{"op": "replace_text", "old": "--rdzv_endpoint=$(hostname)", "new": "head_node_ip"}]
    proposed = {"op": "replace_text", "old": "srun torchrun --rdzv_endpoint=$(hostname):29400 t.py"}
    assert meets(endpoint, [proposed | {"new": "srun torchrun --rdzv_endpoint=$head_node_ip:29400 t.py"}])
    assert not meets(endpoint, [proposed | {"new": "srun torchrun --rdzv_endpoint=$head_node_ip2:29400 t.py"}])


def test_scores_count_fixes_site_values_and_advice(bench_dir, monkeypatch):
    write(bench_dir, CASE)
    write(bench_dir, LIMIT)
    monkeypatch.setattr("maple_ci.bench_debug.debug_dir", lambda: bench_dir)
    report = run_debug(load_debug_cases(bench_dir))
    assert report["located"]["count"] == 2 and report["classified"]["count"] == 2
    assert report["advice"] == {"count": 2, "total": 2, "rate": 1.0} and report["wrong_edit"]["count"] == 0
    assert report["fix_proposed"]["total"] == 0 and not report["failures"]
    by_case = {r["case"]: r for r in report["rows"]}
    assert by_case["acct-missing"]["advice_kind"] == "site_value" and by_case["job-limit"]["advice_kind"] == "policy"
