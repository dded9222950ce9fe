"""The mini-apps really train and report under each launcher family, on CPU with gloo.

Launchers that exist here run for real (torchrun, the deepspeed launcher, accelerate launch); srun
and mpiexec are emulated by starting the ranks ourselves with the variables those launchers set,
which is what the mini-app's rank detection reads. Every run uses ports picked free just before.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys

import pytest

from maple_ci.miniapp_result import parse_result, parse_results
from maple_ci.paths import miniapps_dir

MINIAPPS = miniapps_dir()
_spec = importlib.util.spec_from_file_location("miniapps_common", MINIAPPS / "_common.py")
common = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = common  # dataclasses look their module up while the class is built
_spec.loader.exec_module(common)

TIMEOUT_S = 240
# Variables a surrounding job (pytest inside an sbatch, under mpiexec, ...) would leak into the runs.
_LAUNCHER_PREFIXES = ("SLURM_", "PMI_", "PALS_", "OMPI_", "MV2_", "MPI_LOCAL", "PBS_")
_LAUNCHER_VARS = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in _LAUNCHER_VARS and not k.startswith(_LAUNCHER_PREFIXES)}
    # One thread per rank: the machine running the tests is small and shared.
    env.update({"OMP_NUM_THREADS": "1", "MAPLE_MINIAPP_TIMEOUT": "120", **extra})
    return env


def assert_ran(rc: int, out: str, err: str, miniapp: str, world_size: int, launcher: str) -> dict:
    result = parse_result(out)
    assert rc == 0 and result is not None and result["ok"], f"rc={rc}\n{out}\n{err[-4000:]}"
    assert len(parse_results(out)) == 1, "rank 0 alone prints the result line"
    assert result["miniapp"] == miniapp and result["launcher"] == launcher
    assert result["world_size"] == world_size
    assert result["ranks_seen"] == list(range(world_size))
    assert result["backend"] == "gloo" and result["device"].startswith("cpu")
    assert 0 < result["loss"] < 10 and result["step_time_s"] > 0  # ln(256) ~ 5.5 at random init
    # all-reduce bandwidth as nccl-tests reports it: busbw = algbw * 2(n-1)/n, none for one rank
    rows = result["allreduce"]
    assert [r["bytes"] for r in rows] == (list(common.ALLREDUCE_BYTES["cpu"]) if world_size > 1 else [])
    for r in rows:
        assert r["algbw_gbps"] == pytest.approx(r["bytes"] / r["time_us"] / 1e3, rel=0.05, abs=2e-3)
        assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * 2 * (world_size - 1) / world_size, rel=0.02, abs=2e-3)
    return result


def _emulated(script: str, rank_envs: list[dict[str, str]]) -> list[tuple[list[str], dict[str, str]]]:
    """One process per rank, started directly with the variables srun or mpiexec would set."""
    return [([sys.executable, str(MINIAPPS / script)], clean_env(**env)) for env in rank_envs]


def _launched(cmd: list[str], **env: str) -> list[tuple[list[str], dict[str, str]]]:
    return [(cmd, clean_env(**env))]


def _planned_runs() -> dict[str, list[tuple[list[str], dict[str, str]]]]:
    srun_port, pmi_port = str(free_port()), str(free_port())
    return {
        "ddp/torchrun": _launched(["torchrun", "--standalone", "--nproc_per_node", "4", str(MINIAPPS / "ddp.py")]),
        # srun: no MASTER_ADDR, so it must come from the nodelist.
        "ddp/srun": _emulated("ddp.py", [
            dict(SLURM_PROCID=str(r), SLURM_NTASKS="2", SLURM_LOCALID=str(r), SLURM_JOB_NODELIST="localhost",
                 MASTER_PORT=srun_port) for r in range(2)]),
        # mpiexec (Hydra) in a batch script: every rank also inherits the batch step's SLURM_PROCID=0,
        # which must not win over PMI_RANK. No MASTER_ADDR and no nodelist: single node, 127.0.0.1.
        "fsdp/mpiexec": _emulated("fsdp.py", [
            dict(PMI_RANK=str(r), PMI_SIZE="2", MPI_LOCALRANKID=str(r), SLURM_PROCID="0", SLURM_NTASKS="1",
                 MASTER_PORT=pmi_port) for r in range(2)]),
        "fsdp/torchrun": _launched(["torchrun", "--standalone", "--nproc_per_node", "2", str(MINIAPPS / "fsdp.py")]),
        # --num_gpus N makes the launcher start N ranks although the CPU accelerator counts one
        # "device"; the flags a DeepSpeed launch line passes to the program must be tolerated.
        "deepspeed/deepspeed": _launched(["deepspeed", "--num_gpus", "2", "--master_port", str(free_port()),
                                          str(MINIAPPS / "deepspeed_zero3.py"),
                                          "--deepspeed", "--deepspeed_config", "ds.json"]),
        # Without GPUs --multi_gpu still starts N processes (torchrun underneath); --cpu would start
        # one unless given an mpirun hostfile.
        "accelerate/accelerate": _launched(["accelerate", "launch", "--multi_gpu", "--num_processes", "2",
                                            "--num_machines", "1", "--mixed_precision", "no",
                                            "--dynamo_backend", "no", "--main_process_port", str(free_port()),
                                            str(MINIAPPS / "accelerate_ddp.py")]),
        # World size 2 but only rank 0 starts: the rendezvous must time out into ok=false, not hang.
        "ddp/missing-rank": _launched([sys.executable, str(MINIAPPS / "ddp.py")], RANK="0", WORLD_SIZE="2",
                                      LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                                      MAPLE_MINIAPP_TIMEOUT="3"),
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[int, str, str]]:
    """All runs at once: each spends much of its time waiting (rendezvous, launchers polling their
    workers), so together they keep both cores busy; one after another they would not fit the
    suite's time budget. Output goes to files, not pipes, so no run blocks on a full pipe nobody
    reads yet. Each run is its own session, so a hung launcher is killed with its workers.
    Returns name -> (worst exit status of its processes, stdout, stderr)."""
    logs = tmp_path_factory.mktemp("miniapps")
    started = []
    for name, procs in _planned_runs().items():
        for i, (cmd, env) in enumerate(procs):
            out = logs / f"{name.replace('/', '_')}.{i}.out"
            err = logs / f"{name.replace('/', '_')}.{i}.err"
            with open(out, "w") as fo, open(err, "w") as fe:
                proc = subprocess.Popen(cmd, env=env, stdout=fo, stderr=fe, start_new_session=True)
                started.append((name, proc, out, err))
    results: dict[str, tuple[int, str, str]] = {}
    for name, proc, out, err in started:
        try:
            rc = abs(proc.wait(timeout=TIMEOUT_S))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = 124
        prev_rc, prev_out, prev_err = results.get(name, (0, "", ""))
        results[name] = (max(prev_rc, rc), prev_out + out.read_text(), prev_err + err.read_text())
    return results


@pytest.mark.parametrize("name, miniapp, world_size, launcher", [
    ("ddp/torchrun", "ddp", 4, "env"),
    ("ddp/srun", "ddp", 2, "slurm"),
    ("fsdp/mpiexec", "fsdp", 2, "pmi"),
    ("fsdp/torchrun", "fsdp", 2, "env"),
    ("deepspeed/deepspeed", "deepspeed_zero3", 2, "env"),
    ("accelerate/accelerate", "accelerate_ddp", 2, "env"),
])
def test_miniapp_trains_and_reports(runs, name, miniapp, world_size, launcher):
    assert_ran(*runs[name], miniapp, world_size, launcher)


def test_every_strategy_reaches_the_same_loss(runs):
    # Same initial weights, same per-rank data, no dropout: if every strategy really averages
    # gradients across ranks, the mean loss after the second step agrees. A run that trains each
    # rank on its own (Accelerate left at DistributedType.NO did) drifts in the third decimal.
    losses = {name: parse_result(runs[name][1])["loss"]
              for name in ("ddp/srun", "fsdp/mpiexec", "fsdp/torchrun", "deepspeed/deepspeed", "accelerate/accelerate")}
    reference = losses["ddp/srun"]
    assert all(loss == pytest.approx(reference, abs=1e-4) for loss in losses.values()), losses


def test_missing_rank_fails_with_result_line_and_nonzero_exit(runs):
    rc, out, err = runs["ddp/missing-rank"]
    result = parse_result(out)
    assert rc != 0, err[-2000:]
    assert result is not None and result["ok"] is False and result["error"] and result["rank"] == 0


# --- launcher detection on dict inputs ------------------------------------------------------

@pytest.mark.parametrize("env, expected", [
    ({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1"}, ("env", 3, 8, 1)),
    ({"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1"}, ("slurm", 5, 8, 1)),
    ({"SLURM_PROCID": "5", "SLURM_NPROCS": "8"}, ("slurm", 5, 8, None)),
    ({"PMI_RANK": "2", "PMI_SIZE": "4", "MPI_LOCALRANKID": "0"}, ("pmi", 2, 4, 0)),
    ({"PMI_RANK": "2", "PMI_SIZE": "4", "PMI_LOCAL_RANK": "1"}, ("pmi", 2, 4, 1)),
    ({"OMPI_COMM_WORLD_RANK": "7", "OMPI_COMM_WORLD_SIZE": "16", "OMPI_COMM_WORLD_LOCAL_RANK": "3"},
     ("openmpi", 7, 16, 3)),
    ({"MV2_COMM_WORLD_RANK": "1", "MV2_COMM_WORLD_SIZE": "2", "MV2_COMM_WORLD_LOCAL_RANK": "1"}, ("mvapich", 1, 2, 1)),
    # Cray PALS (Polaris, Aurora): no PALS_SIZE exists; world size comes from PMI_SIZE.
    ({"PALS_RANKID": "13", "PALS_LOCAL_RANKID": "1", "PMI_SIZE": "24", "PMI_RANK": "13"}, ("pals", 13, 24, 1)),
    ({}, ("none", 0, 1, 0)),
])
def test_detect_launch_per_family(env, expected):
    got = common.detect_launch(env)
    assert (got.launcher, got.rank, got.world_size, got.local_rank) == expected


@pytest.mark.parametrize("env, family, rank", [
    # torchrun started by srun: the worker sees its agent's Slurm variables, RANK is the truth.
    ({"RANK": "6", "WORLD_SIZE": "8", "LOCAL_RANK": "2", "SLURM_PROCID": "1", "SLURM_NTASKS": "2"}, "env", 6),
    # mpiexec inside sbatch: the batch step's SLURM_PROCID=0 reaches every rank.
    ({"PMI_RANK": "3", "PMI_SIZE": "4", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, "pmi", 3),
    ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, "openmpi", 3),
])
def test_detect_launch_prefers_the_innermost_launcher(env, family, rank):
    got = common.detect_launch(env)
    assert (got.launcher, got.rank) == (family, rank)


def test_detect_launch_rejects_rank_outside_world():
    with pytest.raises(ValueError, match="outside world size"):
        common.detect_launch({"PMI_RANK": "4", "PMI_SIZE": "4"})


def test_rendezvous_address_sources(tmp_path):
    assert common.rendezvous_address({"MASTER_ADDR": "n1", "MASTER_PORT": "1234"}) == ("n1", "1234")
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("x3005c0s7b0n0\nx3005c0s7b0n0\nx3005c0s13b1n0\n")
    assert common.rendezvous_address({"PBS_NODEFILE": str(nodefile), "PBS_JOBID": "4242.polaris-pbs-01"}) == \
        ("x3005c0s7b0n0", str(29500 + 242))
    assert common.rendezvous_address({"SLURM_JOB_NODELIST": "localhost", "SLURM_JOB_ID": "17"}) == ("localhost", "29517")
    assert common.rendezvous_address({}) == ("127.0.0.1", "29500")


@pytest.mark.parametrize("device_index, local_rank", [(None, "3"), (0, "0")])
def test_export_launch_env_points_local_rank_at_the_device(monkeypatch, device_index, local_rank):
    # srun --gpus-per-task=1: local id 3, but the one visible GPU is index 0 (DeepSpeed and
    # Accelerate pick their device from LOCAL_RANK). On CPU (no index) the local id stays.
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.setenv(name, "")  # restored after the test, whatever export writes
    monkeypatch.setenv("MASTER_ADDR", "n1")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)  # the port would follow a surrounding job's id
    monkeypatch.delenv("PBS_JOBID", raising=False)
    common.export_launch_env(common.LaunchEnv("slurm", 7, 8, 3), device_index)
    assert (os.environ["RANK"], os.environ["WORLD_SIZE"], os.environ["LOCAL_RANK"]) == ("7", "8", local_rank)
    assert (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]) == ("n1", "29500")


def test_first_host_of_nodelist_without_scontrol(monkeypatch):
    monkeypatch.setattr(common.shutil, "which", lambda name: None)
    assert common.first_host_of_nodelist("nid[001-004,010],login1") == "nid001"
    assert common.first_host_of_nodelist("gpu-a12,gpu-b3") == "gpu-a12"
    assert common.first_host_of_nodelist("node7") == "node7"


def test_launcher_flags_are_ignored():
    args = common.parse_args(["--local_rank=1", "--deepspeed", "--deepspeed_config", "ds.json",
                              "--steps", "1", "--batch_size", "8"])
    assert args.steps == 1


# --- result line parsing ------------------------------------------------------------------------

def test_parse_result_reads_labelled_lines_and_prefers_failures():
    ok = '0: MAPLE_MINIAPP_RESULT {"ok": true, "miniapp": "ddp", "world_size": 2, "ranks_seen": [0, 1]}'
    failed = '[1] MAPLE_MINIAPP_RESULT {"ok": false, "miniapp": "ddp", "rank": 1, "error": "boom"} trailing'
    assert parse_result(f"noise\n{ok}\nmore noise\n")["ranks_seen"] == [0, 1]
    assert parse_result(f"{ok}\n{failed}\n")["error"] == "boom"
    assert parse_result("training log without a result\n") is None
    # A line cut off mid-JSON (job killed while printing) is not a result.
    assert parse_result('MAPLE_MINIAPP_RESULT {"ok": true, "miniapp"') is None


def test_nccl_is_asked_for_the_lines_that_name_its_network_unless_the_job_set_a_level(monkeypatch):
    monkeypatch.delenv("NCCL_DEBUG", raising=False)
    monkeypatch.delenv("NCCL_DEBUG_SUBSYS", raising=False)
    common.ask_transport_log("gloo")
    assert "NCCL_DEBUG" not in os.environ
    common.ask_transport_log("nccl")
    assert (os.environ["NCCL_DEBUG"], os.environ["NCCL_DEBUG_SUBSYS"]) == ("INFO", "INIT,NET")
    monkeypatch.setenv("NCCL_DEBUG", "WARN")
    monkeypatch.delenv("NCCL_DEBUG_SUBSYS")
    common.ask_transport_log("nccl")
    assert os.environ["NCCL_DEBUG"] == "WARN" and "NCCL_DEBUG_SUBSYS" not in os.environ
