"""The debug agent: locator, knowledge base, edit operations, suggestions and the fix loop."""

import random
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from pydantic import TypeAdapter

from maple_ci import debug
from maple_ci.debug.candidates import SITE_VALUES
from maple_ci import schedulers
from maple_ci.errors import MapleError
from maple_ci.paths import templates_dir
from maple_ci.profiles import get_profile, load_profiles

# Site values a person can look up: every scheduler's own commands and the ones common to all.
FINDABLE = set(SITE_VALUES) | {name for unit in schedulers.all() for name in unit.site_queries}

LOGS = Path(__file__).parent / "data" / "logs"
OPS = TypeAdapter(list[debug.EditOp])


def ops(*items: dict) -> list:
    return OPS.validate_python(list(items))


pytestmark = pytest.mark.usefixtures("module_data_dir")


# --------------------------------------------------------------------------------------------
# Line classifier and locator


@pytest.mark.parametrize(
    "benign, real",
    [
        (
            "[W socket.cpp:663] [c10d] The client socket cannot be initialized to connect to [frontier00001]:3442 (errno: 97 - Address family not supported by protocol).",
            "[E socket.cpp:663] [c10d] The server socket has failed to bind to [::]:3442 (errno: 98 - Address already in use).",
        ),
        ("srun: error: ioctl(TIOCGWINSZ): Inappropriate ioctl for device", "srun: error: Unable to create step for job 42: Invalid generic resource (gres) specification"),
        (
            "ERROR: ld.so: object '/soft/libnccl-net.so' from LD_PRELOAD cannot be preloaded (cannot open shared object file): ignored.",
            "ERROR: No matching distribution found for torch==2.5.1",
        ),
        ("UserWarning: ImportError of apex: falling back to torch implementation", "ImportError: cannot import name 'FusedAdam' from 'apex'"),
        ("PMIX ERROR: PMIX_ERR_NOT_FOUND in file dstore_base.c at line 1567", "PMIX ERROR: PMIX_ERR_UNREACH in file ptl_base_connect.c at line 200"),
        # c10d retries behind srun's label; a retry to a host name that does not exist is no retry
        (
            "1: [W1121 05:51:37.136988592 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=3): Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?",
            "1: [W1121 05:49:40.615797548 socket.cpp:764] [c10d] The IPv6 network addresses of (nid001234, 29731) cannot be retrieved (gai error: -2 - Name or service not known).",
        ),
    ],
)
def test_benign_lines_are_not_errors_but_their_look_alikes_are(benign, real):
    assert not debug.is_error_line(benign)
    assert debug.is_error_line(real)


def test_plain_training_output_is_not_an_error():
    for line in ["step 10 loss 2.31 error-rate 0.12", "NCCL INFO Using network Socket", "Lmod Warning: module is deprecated", "12:30:01 epoch 3 done"]:
        assert not debug.is_error_line(line)


def generated_log(lines: int, first_error: int, seed: int = 7) -> tuple[str, str]:
    """A multi-rank training log of `lines` lines: steps, INFO and benign warning noise, then at
    line `first_error` (1-based) a rank's traceback, followed by the cascade a real job prints
    (other ranks' tracebacks, NCCL timeouts, srun and slurmstepd errors). Returns (log, exception)."""
    rng = random.Random(seed)
    noise = [
        "[rank{r}]: step {s} loss {l:.4f} lr 3.0e-04 tokens/s {t}",
        "nid00{n}:1234:1300 [{r}] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
        "[W socket.cpp:663] [c10d] The client socket cannot be initialized to connect to [nid001234]:29500 (errno: 97 - Address family not supported by protocol).",
        "srun: error: ioctl(TIOCGWINSZ): Inappropriate ioctl for device",
        "/usr/lib/python3.11/site-packages/torch/utils/data/dataloader.py:617: UserWarning: This DataLoader will create 16 worker processes in total.",
    ]
    out = []
    while len(out) < first_error - 1:
        template = noise[0] if rng.random() < 0.8 else rng.choice(noise[1:])
        out.append(template.format(r=rng.randrange(8), s=len(out), l=rng.random() * 4, t=rng.randrange(40000, 60000), n=rng.randrange(1000, 9999)))
    exception = "[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    out += ["[rank5]: Traceback (most recent call last):"]
    out += [f'[rank5]:   File "/usr/lib/python3.11/site-packages/model.py", line {i}, in forward' for i in range(30)]
    out.append(exception)
    cascade = [
        "[rank{r}]:[E1121 05:00:00.000000 1234 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={s}, OpType=ALLREDUCE) ran for 600010 milliseconds before timing out.",
        "[rank{r}]: Traceback (most recent call last):",
        "[rank{r}]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank {r}.",
        "srun: error: nid001235: task {r}: Exited with exit code 1",
        "slurmstepd: error: *** STEP 4242.0 ON nid001234 CANCELLED AT 2026-11-21T05:00:00 ***",
    ]
    while len(out) < lines:
        out.append(rng.choice(cascade).format(r=rng.randrange(8), s=len(out)))
    return "\n".join(out) + "\n", exception


@pytest.mark.parametrize("first_error", [1, 512, 513, 1025, 15_321, 20_000])
def test_locate_finds_the_first_error_in_a_20k_line_log(first_error):
    log, exception = generated_log(20_500, first_error)
    assert len(log.splitlines()) >= 20_000
    started = time.perf_counter()
    failure = debug.locate(log)
    elapsed = time.perf_counter() - started
    print(f"locate: first error at line {first_error} of 20,500 found in {elapsed * 1000:.1f} ms")
    assert failure.line_no == first_error
    assert failure.line == "[rank5]: Traceback (most recent call last):"
    # The traceback is 32 lines long: the window stretches past 20 lines to its exception.
    assert failure.exception == exception and failure.window[-1] == exception
    assert failure.window_start == max(1, first_error - debug.WINDOW_BEFORE)
    assert failure.category == "program" and failure.ranks == [5]
    assert elapsed < 2.0


def test_line_numbers_count_newlines_only():
    # A progress bar redraws itself with carriage returns; a Windows-edited log ends lines with \r\n.
    log = "epoch 1\r\n\r 10%|#         |\r 50%|#####     |\r100%|##########|\nRuntimeError: boom\r\n"
    failure = debug.locate(log)
    assert (failure.line_no, failure.line) == (3, "RuntimeError: boom")


def test_locate_returns_none_when_no_line_is_an_error():
    log, _ = generated_log(4000, 3501)
    assert debug.locate("\n".join(log.splitlines()[:3500])) is None


@pytest.mark.parametrize(
    "name, line_no, category",
    [
        ("scheduler_invalid_partition.log", 1, "scheduler"),
        ("scheduler_pbs_filesystems.log", 1, "scheduler"),
        ("scheduler_time_limit_slurm23.log", 2, "scheduler"),  # recorded on the local test cluster
        ("launcher_rendezvous_timeout.log", 6, "launcher"),  # after two benign errno 97 lines
        ("environment_lmod_unknown.log", 1, "environment"),  # not the ModuleNotFoundError it causes
        ("environment_remote_ranks.log", 3, "environment"),
        ("library_nccl_system_error.log", 6, "library"),
        ("infrastructure_node_failure.log", 3, "infrastructure"),
        ("program_cuda_oom.log", 2, "program"),
    ],
)
def test_locate_and_classify_real_looking_logs(name, line_no, category):
    log = (LOGS / name).read_text()
    failure = debug.locate(log)
    assert (failure.line_no, failure.category) == (line_no, category)
    assert failure.line == log.splitlines()[line_no - 1]


# --------------------------------------------------------------------------------------------
# Knowledge base


def test_knowledge_base_is_large_grouped_and_sourced():
    entries = debug.load_kb()
    assert len(entries) >= 40
    files = {p.stem for p in (templates_dir() / "errors").glob("*.yaml")}
    assert {"slurm", "pbs", "rendezvous", "nccl", "lmod", "python", "aarch64", "xpu", "deepspeed", "infra"} <= files
    assert {e.category for e in entries} == {"scheduler", "launcher", "environment", "library", "infrastructure", "program"}
    known = set(load_profiles())
    for e in entries:
        assert e.source.startswith("https://") and e.examples
        assert set(e.clusters) <= known | {"any"}, e.id


def test_every_example_is_located_and_matches_its_own_entry_first():
    entries = debug.load_kb()
    for entry in entries:
        cluster = None if "any" in entry.clusters else entry.clusters[0]
        for example in entry.examples:
            failure = debug.locate(example)
            assert failure is not None, (entry.id, example)
            hits = debug.exact_matches(failure, cluster)
            assert hits and hits[0].entry.id == entry.id, (entry.id, [h.entry.id for h in hits])


def test_every_value_a_fix_names_is_captured_or_known():
    # What a fix may name: its patterns' and precondition's named groups, facts of some cluster
    # profile, or a site value a person can look up (SITE_VALUES, with the command that finds it).
    # A typo here would only show up on a real failure.
    profile_facts = set().union(*(debug.fix_context(name) for name in load_profiles()))
    for entry in debug.load_kb():
        groups = set().union(*(r.groupindex for r in entry.regexes))
        for fix in entry.alternatives:
            captured = groups.union(*(re.compile(p).groupindex for p in fix.requires))
            for op in fix.ops:
                for value in op.model_dump().values():
                    names = set(re.findall(r"(?<!\$)\{([A-Za-z_]\w*)\}", str(value)))
                    assert names <= captured | profile_facts | FINDABLE, (entry.id, names)


def test_match_puts_exact_hits_first_with_captured_groups():
    failure = debug.locate((LOGS / "scheduler_invalid_partition.log").read_text())
    found = debug.match(failure, cluster="delta", k=3)
    assert found[0].entry.id == "slurm-invalid-partition" and found[0].kind == "exact"
    assert found[0].groups == {"bad_partition": "gpu-a100x"}
    assert [m.kind for m in found[1:]] == ["similar", "similar"]
    assert all(m.score < 1.0 for m in found[1:])


def test_match_finds_nearest_known_cases_without_an_exact_pattern():
    # Wording no pattern covers: the nearest known cases still come from the same family.
    log = "nid001234:1234:1300 [0] NCCL WARN NET/OFI Could not find the libfabric provider cxi\nRuntimeError: NCCL communicator could not be created"
    failure = debug.locate(log)
    found = debug.match(failure, cluster="perlmutter", k=3)
    assert found and all(m.kind == "similar" for m in found)
    assert found[0].entry.category == "library" and "nccl" in found[0].entry.id


def test_cluster_specific_entries_win_only_on_their_cluster():
    log = "[rank0]:[E1121 05:00:00.0 1 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2) ran for 600000 milliseconds before timing out."
    failure = debug.locate(log)
    assert debug.exact_matches(failure, "polaris")[0].entry.id == "polaris-nccl-ofi-hang"
    assert debug.exact_matches(failure, "frontier")[0].entry.id == "frontier-collective-hang"
    assert [m.entry.id for m in debug.exact_matches(failure, None)] == ["nccl-collective-timeout"]


def test_missing_module_only_on_remote_ranks_means_environment_not_propagated():
    remote = debug.locate((LOGS / "environment_remote_ranks.log").read_text())
    assert remote.ranks == [4, 6]
    assert debug.exact_matches(remote, "perlmutter")[0].entry.id == "python-module-missing-remote"
    # On a node with 8 GPUs ranks 4 and 6 share the first node: nothing says the env is missing there.
    assert debug.exact_matches(remote, "bridges2")[0].entry.id == "python-module-missing"
    local = debug.locate("0: ModuleNotFoundError: No module named 'deepspeed'\n1: ModuleNotFoundError: No module named 'deepspeed'\n")
    assert local.ranks == [0, 1]
    assert debug.exact_matches(local, "perlmutter")[0].entry.id == "python-module-missing"


# --------------------------------------------------------------------------------------------
# Edit operations

SLURM = """#!/bin/bash
#SBATCH -A m1234 -C gpu -q foo -N 2
#SBATCH --time=01:00:00
#SBATCH --gres=gpu:4
#SBATCH --export=NONE
module load PrgEnv-gnu
module load pytorch/1.13.1

export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
export NCCL_CROSS_NIC=1
srun hostname
srun --ntasks-per-node=1 torchrun --nnodes=2 \\
    --nproc_per_node=8 train.py --backend ccl
"""

PBS = """#!/bin/bash -l
#PBS -A myproj -q debug
#PBS -l select=2:system=polaris
#PBS -l walltime=01:00:00,place=scatter
module use /soft/modulefiles
module load conda
mpiexec -n 8 --ppn 4 --cpu-bind depth python3 train.py
"""


def changed_lines(old: str, new: str) -> list[str]:
    return [line for line in debug.diff(old, new, "job").splitlines()[2:] if line[:1] in "+-"]


@pytest.mark.parametrize(
    "script, op, expected",
    [
        # replaced in place, in the user's own short form, on a line with other options
        (SLURM, {"op": "set_directive", "name": "--qos", "value": "regular"},
         ["-#SBATCH -A m1234 -C gpu -q foo -N 2", "+#SBATCH -A m1234 -C gpu -q regular -N 2"]),
        # added after the last directive when absent
        (SLURM, {"op": "set_directive", "name": "--partition", "value": "gpu"}, ["+#SBATCH --partition=gpu"]),
        (PBS, {"op": "set_directive", "name": "-l filesystems", "value": "home:eagle"}, ["+#PBS -l filesystems=home:eagle"]),
        # the PBS unit writes each resource of a comma list as its own -l (same request to qsub)
        (PBS, {"op": "set_directive", "name": "-l walltime", "value": "00:30:00"},
         ["-#PBS -l walltime=01:00:00,place=scatter", "+#PBS -l walltime=00:30:00 -l place=scatter"]),
        (PBS, {"op": "set_directive", "name": "-q", "value": "prod"}, ["-#PBS -A myproj -q debug", "+#PBS -A myproj -q prod"]),
        (SLURM, {"op": "remove_directive", "name": "--gres"}, ["-#SBATCH --gres=gpu:4"]),
        (SLURM, {"op": "remove_directive", "name": "--constraint"},
         ["-#SBATCH -A m1234 -C gpu -q foo -N 2", "+#SBATCH -A m1234 -q foo -N 2"]),
        (SLURM, {"op": "add_module", "name": "gcc"}, ["+module load gcc"]),
        (SLURM, {"op": "add_module", "name": "pytorch"}, []),  # a version of it is loaded already
        (SLURM, {"op": "export_env", "name": "NCCL_DEBUG", "value": "INFO"}, ["+export NCCL_DEBUG=INFO"]),
        (SLURM, {"op": "export_env", "name": "NCCL_CROSS_NIC", "value": "0"}, ["-export NCCL_CROSS_NIC=1", "+export NCCL_CROSS_NIC=0"]),
        (SLURM, {"op": "unset_env", "name": "NCCL_CROSS_NIC"}, ["-export NCCL_CROSS_NIC=1", "+unset NCCL_CROSS_NIC"]),
        (SLURM, {"op": "replace_flag", "flag": "--nproc-per-node", "value": "4"},
         ["-    --nproc_per_node=8 train.py --backend ccl", "+    --nproc_per_node=4 train.py --backend ccl"]),
        (PBS, {"op": "replace_flag", "flag": "--ppn", "value": "1"},
         ["-mpiexec -n 8 --ppn 4 --cpu-bind depth python3 train.py", "+mpiexec -n 8 --ppn 1 --cpu-bind depth python3 train.py"]),
        # the training srun (the last one), not the `srun hostname` probe
        (SLURM, {"op": "add_flag", "launcher": "srun", "flag": "--export", "value": "ALL"},
         ["-srun --ntasks-per-node=1 torchrun --nnodes=2 \\", "+srun --export=ALL --ntasks-per-node=1 torchrun --nnodes=2 \\"]),
        ("srun --export NONE python t.py\n", {"op": "add_flag", "launcher": "srun", "flag": "--export", "value": "ALL"},
         ["-srun --export NONE python t.py", "+srun --export=ALL python t.py"]),
        ("time NCCL_DEBUG=INFO srun python t.py\n", {"op": "add_flag", "launcher": "srun", "flag": "--export", "value": "ALL"},
         ["-time NCCL_DEBUG=INFO srun python t.py", "+time NCCL_DEBUG=INFO srun --export=ALL python t.py"]),
        (PBS, {"op": "add_flag", "launcher": "mpiexec", "flag": "--no-vni"},
         ["-mpiexec -n 8 --ppn 4 --cpu-bind depth python3 train.py", "+mpiexec --no-vni -n 8 --ppn 4 --cpu-bind depth python3 train.py"]),
        (SLURM, {"op": "replace_text", "old": "module load pytorch/1.13.1", "new": "module load pytorch/2.8.0"},
         ["-module load pytorch/1.13.1", "+module load pytorch/2.8.0"]),
        (PBS, {"op": "replace_text", "old": "module load conda", "new": "module load conda\nconda activate"}, ["+conda activate"]),
        # words inside a line: one module of several
        ("module load PrgEnv-gnu pytorch/1.13.1 cudatoolkit\n", {"op": "replace_text", "old": "pytorch/1.13.1", "new": "pytorch/2.8.0"},
         ["-module load PrgEnv-gnu pytorch/1.13.1 cudatoolkit", "+module load PrgEnv-gnu pytorch/2.8.0 cudatoolkit"]),
    ],
)  # fmt: skip
def test_each_edit_changes_only_its_lines_and_is_idempotent(script, op, expected):
    patched = debug.apply_fix(script, ops(op), {})
    assert changed_lines(script, patched) == expected
    assert debug.apply_fix(patched, ops(op), {}) == patched


def test_inserted_env_goes_before_the_first_launch_line_and_modules_after_the_last_module():
    script = "#!/bin/bash\n#SBATCH -N 1\ncd $SLURM_SUBMIT_DIR\npython train.py\n"
    patched = debug.apply_fix(script, ops({"op": "export_env", "name": "TMPDIR", "value": "/tmp"}, {"op": "add_module", "name": "gcc"}), {})
    assert patched == "#!/bin/bash\n#SBATCH -N 1\ncd $SLURM_SUBMIT_DIR\nexport TMPDIR=/tmp\nmodule load gcc\npython train.py\n"


def test_a_fix_with_several_guarded_replacements_applies_those_that_fit():
    fix = next(e.fix for e in debug.load_kb() if e.id == "frontier-collective-hang")
    script = "#!/bin/bash\nexport FI_MR_CACHE_MONITOR=memhooks\nsrun python train.py\n"
    patched = debug.apply_fix(script, fix, debug.fix_context("frontier"))
    assert changed_lines(script, patched) == ["-export FI_MR_CACHE_MONITOR=memhooks", "+export FI_MR_CACHE_MONITOR=kdreg2"]


def test_values_come_from_context_and_are_quoted_when_not_plain():
    op = ops({"op": "export_env", "name": "NCCL_NET", "value": "{NCCL_NET}"}, {"op": "set_directive", "name": "--qos", "value": "{qos}"})
    patched = debug.apply_fix(SLURM, op, {"NCCL_NET": "AWS Libfabric", "qos": "regular"})
    assert "export NCCL_NET='AWS Libfabric'\n" in patched and "-q regular" in patched
    # ${...} is shell, left alone
    shell = ops({"op": "export_env", "name": "MASTER_PORT", "value": "$((10000 + ${SLURM_JOB_ID} % 50000))"})
    assert "export MASTER_PORT=$((10000 + ${SLURM_JOB_ID} % 50000))" in debug.apply_fix(SLURM, shell, {})
    with pytest.raises(MapleError, match="needs account"):
        debug.apply_fix(SLURM, ops({"op": "set_directive", "name": "--account", "value": "{account}"}), {})


@pytest.mark.parametrize(
    "op, message",
    [
        ({"op": "replace_flag", "flag": "--ppn", "value": "1"}, "passes no"),
        ({"op": "add_flag", "launcher": "mpiexec", "flag": "--no-vni"}, "no mpiexec line"),
        ({"op": "set_directive", "name": "-l walltime", "value": "01:00:00"}, "not a #SBATCH option"),
    ],
)
def test_edits_that_cannot_apply_say_why(op, message):
    with pytest.raises(MapleError, match=message):
        debug.apply_fix(SLURM, ops(op), {})
    absent = ops({"op": "replace_text", "old": "module load gcc", "new": "module load gcc/12"})
    assert debug.apply_fix(SLURM, absent, {}) == SLURM  # the guard: only what is there is replaced
    twice = "module load gcc\nsrun a.out\nmodule load gcc\n"
    with pytest.raises(MapleError, match="occurs 2 times"):
        debug.apply_fix(twice, ops({"op": "replace_text", "old": "module load gcc", "new": "module load gcc/12"}), {})


@pytest.mark.parametrize("script, cluster", [(SLURM, "perlmutter"), (PBS, "polaris")])
def test_every_knowledge_base_fix_applies_idempotently_or_says_why(script, cluster):
    for entry in (e for e in debug.load_kb() if e.fix):
        groups = debug.exact_matches(debug.locate(entry.examples[0]), None if "any" in entry.clusters else entry.clusters[0])[0].groups
        context = debug.fix_context(cluster) | {"account": "proj"} | groups
        try:
            patched = debug.apply_fix(script, entry.fix, context)
        except MapleError:
            continue
        assert debug.apply_fix(patched, entry.fix, context) == patched, entry.id
        assert len(changed_lines(script, patched)) <= 2 * len(entry.fix) + 2, entry.id


# --------------------------------------------------------------------------------------------
# Diffs and suggestions


def test_diff_is_a_unified_diff_of_the_path():
    new = SLURM.replace("-q foo", "-q regular")
    text = debug.diff(SLURM, new, "scripts/perlmutter/train.sbatch")
    assert text.startswith("--- a/scripts/perlmutter/train.sbatch\n+++ b/scripts/perlmutter/train.sbatch\n@@ -1,")
    assert "-#SBATCH -A m1234 -C gpu -q foo -N 2\n+#SBATCH -A m1234 -C gpu -q regular -N 2\n" in text


@pytest.mark.parametrize(
    "old, new",
    [
        ("a\nb\nc\n", "x\na\nb\nc\n"),  # insert at the top
        ("a\nb\nc\n", "x\ny\na\nz\nb\nc\n"),  # inserts at the top and after it share an anchor
        ("a\nb\nc\n", "a\nb\nc\nd\n"),  # append
        ("a\nb\nc\n", "a\nc\n"),  # delete
        ("a\nb\nc\n", "a\n\nc\n"),  # replace with a blank line (not a deletion)
        ("a\nb\nc", "a\nb\nc\n"),  # a newline added at the end of the file
        ("a\nb\nc\nd\ne\n", "a\nB\nc\nd\nE\nf\n"),
        (SLURM, debug.apply_fix(SLURM, ops({"op": "export_env", "name": "NCCL_DEBUG", "value": "INFO"}, {"op": "remove_directive", "name": "--gres"}, {"op": "add_module", "name": "gcc"}), {})),
    ],
)
def test_suggestions_applied_to_the_old_text_give_the_new_text(old, new):
    items = debug.suggestions(old, new, "job.sh")
    assert debug.apply_suggestions(old, items) == new
    old_lines = len(old.splitlines())
    spans = [(s.start_line, s.line) for s in items]
    assert all(1 <= a <= b <= old_lines for a, b in spans)
    assert all(b1 < a2 for (_, b1), (a2, _) in zip(spans, spans[1:]))  # no line in two suggestions


def test_suggestions_round_trip_on_random_edits():
    rng = random.Random(3)
    for _ in range(300):
        old = [f"line {i}\n" for i in range(rng.randrange(1, 12))]
        new = list(old)
        for _ in range(rng.randrange(1, 5)):
            at = rng.randrange(len(new) + 1)
            kind = rng.choice(["insert", "delete", "replace"])
            if kind == "insert" or not new[at:]:
                new.insert(at, f"new {rng.random():.3f}\n")
            elif kind == "delete":
                del new[at]
            else:
                new[at] = f"changed {rng.random():.3f}\n"
        items = debug.suggestions("".join(old), "".join(new), "f")
        assert debug.apply_suggestions("".join(old), items) == "".join(new)


# --------------------------------------------------------------------------------------------
# The loop, against a fake Slurm


def make_site(tmp_path, monkeypatch, partitions: list[str]):
    """A templates folder with one extra Slurm cluster, "testslurm", whose queues are `partitions`
    (the first is the default), each allowing 1 h as the local test cluster's gpu partition does
    (tests/cluster/slurm.conf.in)."""
    profile = get_profile("perlmutter").model_dump()
    queues = [{"name": name, "max_walltime": "01:00:00", "max_nodes": 2, "default": i == 0} for i, name in enumerate(partitions)]
    profile.update(name="testslurm", queue_directive="partition", queues=queues)
    (tmp_path / "clusters").mkdir()
    for path in (templates_dir() / "clusters").glob("*.yaml"):
        shutil.copy(path, tmp_path / "clusters")
    (tmp_path / "clusters" / "testslurm.yaml").write_text(yaml.safe_dump(profile))
    shutil.copytree(templates_dir() / "errors", tmp_path / "errors")
    monkeypatch.setenv("MAPLE_TEMPLATES_DIR", str(tmp_path))
    return get_profile("testslurm")


@pytest.fixture
def site(tmp_path, monkeypatch):
    return make_site(tmp_path, monkeypatch, ["gpu", "gpu-debug"])


def fake_sbatch(profile, accounts: set[str]):
    """Answers as sbatch would: the partition is checked first, then the account."""
    partitions = {q.name for q in profile.queues}

    def run(script: str) -> debug.RunOutcome:
        partition = re.search(r"^#SBATCH\s+(?:-p\s*|--partition[= ])(\S+)", script, re.M)
        if partition and partition[1] not in partitions:
            return debug.RunOutcome(False, f"sbatch: error: invalid partition specified: {partition[1]}\n"
                                           "sbatch: error: Batch job submission failed: Invalid partition name specified\n")  # fmt: skip
        account = re.search(r"^#SBATCH\s+(?:-A\s*|--account[= ])(\S+)", script, re.M)
        if not account or account[1] not in accounts:
            return debug.RunOutcome(False, "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified\n")
        return debug.RunOutcome(True, "Submitted batch job 4242\nMAPLE_MINIAPP_RESULT {}\n")

    return run


JOB = "#!/bin/bash\n#SBATCH -p foo\n#SBATCH -N 2\nsrun python train.py\n"


def test_loop_fixes_partition_then_account_and_passes(site):
    report = debug.debug_loop(JOB, fake_sbatch(site, {"proj_g"}), cluster="testslurm", context={"account": "proj_g"})
    assert report.ok and report.stop_reason == "passed"
    assert [a.entry_id for a in report.attempts] == ["slurm-invalid-partition", "slurm-invalid-account"]
    assert report.script == "#!/bin/bash\n#SBATCH -p gpu\n#SBATCH -N 2\n#SBATCH --account=proj_g\nsrun python train.py\n"
    assert report.attempts[0].ops == ops({"op": "set_directive", "name": "--partition", "value": "gpu"})
    first = report.attempts[0]
    assert first.line == "sbatch: error: invalid partition specified: foo" and first.category == "scheduler"
    assert "-#SBATCH -p foo\n+#SBATCH -p gpu\n" in first.diff


def test_loop_stops_when_the_fix_needs_a_fact_nobody_gave(site):
    report = debug.debug_loop(JOB, fake_sbatch(site, {"proj_g"}), cluster="testslurm")
    assert not report.ok and report.stop_reason == "no_fix"
    assert len(report.attempts) == 1 and "needs account" in report.message
    assert report.failure.category == "scheduler"


def test_loop_stops_on_infrastructure_failures_without_touching_the_script():
    log = (LOGS / "infrastructure_node_failure.log").read_text()
    report = debug.debug_loop(JOB, lambda s: debug.RunOutcome(False, log), cluster="perlmutter")
    assert report.stop_reason == "infrastructure" and report.script == JOB and not report.attempts
    assert "--exclude=nid005678" in report.message


def test_loop_stops_when_a_fix_does_not_help():
    runs = []

    def run(script):
        runs.append(script)  # every run fails the same way, fixed or not
        return debug.RunOutcome(False, "RuntimeError: CUDA error: invalid device ordinal\n")

    script = "#!/bin/bash\n#SBATCH -N 1\nsrun torchrun --nproc_per_node=8 train.py\n"
    report = debug.debug_loop(script, run, cluster="perlmutter")
    assert report.stop_reason == "no_fix" and "changes nothing" in report.message
    assert [a.entry_id for a in report.attempts] == ["invalid-device-ordinal"]
    assert len(runs) == 2 and "--nproc_per_node=4" in runs[1]


def test_loop_reports_program_errors_it_cannot_fix_and_honours_max_iter(site):
    oom = (LOGS / "program_cuda_oom.log").read_text()
    report = debug.debug_loop(JOB, lambda s: debug.RunOutcome(False, oom), cluster="perlmutter")
    assert report.stop_reason == "no_fix" and report.matches[0].entry.id == "cuda-out-of-memory"
    capped = debug.debug_loop(JOB, fake_sbatch(site, {"p"}), cluster="testslurm", max_iter=1, context={"account": "p"})
    assert capped.stop_reason == "max_iter" and len(capped.attempts) == 1


def test_a_fix_in_one_schedulers_shell_is_only_applied_on_its_clusters():
    log = "0: [W1121 05:49:40.615797548 socket.cpp:764] [c10d] The IPv6 network addresses of (nid001234, 29731) cannot be retrieved (gai error: -2 - Name or service not known).\n"
    script = "#!/bin/bash\nexport MASTER_ADDR=nid001234\nsrun python train.py\n"
    slurm = debug.next_fix(script, log, "perlmutter", debug.fix_context("perlmutter"))
    assert slurm.attempt.entry_id == "torch-master-addr-unresolvable"
    assert 'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)\n' in slurm.script
    pbs = debug.next_fix(script, log, "polaris", debug.fix_context("polaris"))
    assert pbs.stop == "no_fix" and pbs.script == script and "its fix is for slurm clusters" in pbs.message


def test_loop_uses_the_module_name_lmod_reported_to_swap_in_the_clusters_own():
    framework = get_profile("perlmutter").setup_for("pytorch").modules[-1]
    available = {framework, "PrgEnv-gnu", "cudatoolkit/11.7"}

    def lmod(script: str) -> debug.RunOutcome:
        for line in re.findall(r"^module load (.+)$", script, re.M):
            unknown = [name for name in line.split() if name not in available]
            if unknown:
                listed = " ".join(f'"{name}"' for name in unknown)  # as Lmod prints it
                return debug.RunOutcome(False, f"Lmod has detected the following error: The following module(s) are unknown:\n{listed}\n")
        return debug.RunOutcome(True, "")

    script = "#!/bin/bash\nmodule load PrgEnv-gnu cudatoolkit/11.7 pytorch/1.13.1\nsrun python train.py\n"
    report = debug.debug_loop(script, lmod, cluster="perlmutter")
    assert report.ok and [a.entry_id for a in report.attempts] == ["lmod-unknown-framework-module"]
    assert report.script == f"#!/bin/bash\nmodule load PrgEnv-gnu cudatoolkit/11.7 {framework}\nsrun python train.py\n"


@pytest.mark.cluster
def test_loop_on_real_slurm_rejections(slurm_cluster, tmp_path, monkeypatch):
    """The same loop against the local Slurm cluster's own answers (sbatch --test-only checks a
    job without queueing it): a partition that does not exist and a walltime over the limit."""
    make_site(tmp_path, monkeypatch, [slurm_cluster.default_partition])
    job = tmp_path / "job.sh"

    def sbatch(script: str) -> debug.RunOutcome:
        job.write_text(script)
        out = subprocess.run(["sbatch", "--test-only", str(job)], capture_output=True, text=True, timeout=60)
        log = out.stdout + out.stderr
        return debug.RunOutcome(out.returncode == 0 and " to start at " in log, log)

    script = "#!/bin/bash\n#SBATCH --partition=nosuchpartition\n#SBATCH --time=99:00:00\n#SBATCH -N 1\nsrun hostname\n"
    report = debug.debug_loop(script, sbatch, cluster="testslurm")
    assert report.ok, report.message
    assert [a.entry_id for a in report.attempts] == ["slurm-invalid-partition", "slurm-time-limit-invalid"]
    assert f"--partition={slurm_cluster.default_partition}" in report.script and "--time=01:00:00" in report.script


@pytest.mark.parametrize("line", [
    "job 3132467 exceeded MEM usage hard limit (2528 > 1126)",  # Moab/Torque
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
    "OpenBLAS blas_thread_init: pthread_create: Resource temporarily unavailable",
    "2026:11:28-06:00:00:(123) oneCCL: atl_ofi_comm.cpp:232 init_transport: EXCEPTION: failed to initialize ATL",
])  # fmt: skip
def test_site_and_library_wordings_without_an_error_prefix_are_located(line):
    failure = debug.locate(f"step 1 done\n{line}\nsrun: error: task 0: Exited with exit code 1\n")
    assert failure is not None and failure.line == line


def test_a_knowledge_base_entry_names_a_registered_scheduler_or_is_refused():
    """The scheduler field is checked against the registry, not a list of two names."""
    from pydantic import ValidationError

    from maple_ci.debug.kb import KBEntry

    entry = {"id": "x", "patterns": ["boom"], "category": "scheduler", "clusters": ["any"],
             "explanation": "e", "source": "https://example.org/", "examples": ["boom"]}
    assert KBEntry(**entry, scheduler="flux").scheduler == "flux"
    with pytest.raises(ValidationError, match="unknown scheduler 'moab'"):
        KBEntry(**entry, scheduler="moab")
