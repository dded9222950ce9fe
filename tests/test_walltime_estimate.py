"""Walltime on the target (maple_ci/estimates/walltime.py): the GPU table covers every profile, the
scaling is work / throughput, and ports' headers give the estimate, ask for a longer walltime or
turn one over the queue's limit into a checkpoint-and-resubmit note. The ports are real
(`port_intent`, as `maple port` runs it after extraction) from JobIntents written here."""

import re
from pathlib import Path

import pytest

from maple_ci.estimates.walltime import gpu, gpu_table, hhmmss, peak_tflops, scaled_seconds
from maple_ci.intent import JobIntent
from maple_ci.port import port, port_intent
from maple_ci.profiles import get_profile, load_profiles

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
pytestmark = pytest.mark.usefixtures("module_data_dir")  # the template index, away from the user's cache


def test_every_profile_gpu_model_is_in_the_table_with_a_vendor_source():
    for profile in load_profiles().values():
        entry = gpu(profile.gpu_model)
        assert entry is not None, profile.gpu_model
    for entry in gpu_table():
        assert entry["source"].startswith("https://")
        assert re.match(r"(unconfirmed|\d{4}-\d{2}-\d{2})\b", entry["read"]), entry["name"]  # a date, or says so
        assert entry["tflops"]["fp32"] > 0  # the fallback every precision can use


def test_scaling_is_work_over_throughput():
    # twice the devices at half the peak each: the same time
    assert scaled_seconds(3600, (8, 312), (16, 156)) == 3600
    assert scaled_seconds(3600, (4, 989.4), (4, 312)) == pytest.approx(3600 * 989.4 / 312)
    assert hhmmss(60 * 61 + 1) == "01:02:00"  # rounded up to the minute: never asks for less


def test_a_precision_a_device_lacks_falls_back_to_fp32():
    assert peak_tflops(gpu("V100-SXM2-32GB"), "bf16") == (15.7, "fp32")
    assert peak_tflops(gpu("V100-SXM2-32GB"), "fp16") == (125, "fp16")
    assert peak_tflops(gpu("A100-SXM4-40GB"), None) == (312, "bf16")


def _walltime_note(intent: JobIntent, target: str, tmp_path: Path) -> str:
    script = port_intent(intent, [target], "job.sbatch", tmp_path / "out")[0].script
    notes = [line for line in script.splitlines() if line.startswith("# Note: walltime")]
    assert len(notes) <= 1
    return notes[0] if notes else ""


def _h100_job(walltime: str, **more) -> JobIntent:
    return JobIntent(source_cluster="jeanzay-h100", scheduler="slurm", launcher="srun", nodes=2, gpus_per_node=4,
                     world_size=8, entrypoint="train.py", script_args=["--bf16"], walltime=walltime, **more)


def test_a_slower_target_asks_for_the_longer_walltime(tmp_path):
    note = _walltime_note(_h100_job("04:00:00"), "polaris", tmp_path)
    expected = hhmmss(4 * 3600 * 989.4 / 312)  # 8 H100 -> 8 A100 at bf16
    assert expected == "12:42:00"
    assert f"walltime estimate on polaris: {expected}" in note and "989.4 vs 312 TFLOPS" in note
    assert f"give --walltime {expected}" in note


def test_an_estimate_over_the_queue_limit_becomes_checkpoint_and_resubmit(tmp_path):
    note = _walltime_note(_h100_job("20:00:00"), "perlmutter", tmp_path)  # about 63.5 h; regular allows 48 h
    assert "longer than the 48:00:00 queue regular allows: checkpoint, and resubmit to go on (about 2 jobs" in note


def test_a_faster_target_keeps_the_source_walltime(tmp_path):
    # the shipped Delta example (2 nodes x 4 A100, 4 h) on Frontier's 2 x 8 MI250X GCDs
    _, results = port(str(EXAMPLES / "deepspeed_zero2.sbatch"), ["frontier"], tmp_path / "out")
    script = results[0].script
    assert "walltime estimate on frontier: 03:16:00" in script  # 4 h x (8 x 312) / (16 x 191.5)
    assert "the port keeps the source's 04:00:00" in script and "--time=04:00:00" in script


def test_unknown_source_or_walltime_or_same_devices(tmp_path):
    unknown = JobIntent(nodes=1, gpus_per_node=4, entrypoint="train.py", walltime="01:00:00")
    assert _walltime_note(unknown, "polaris", tmp_path) == ""  # its GPUs are not known
    no_walltime = JobIntent(source_cluster="jeanzay-h100", nodes=1, entrypoint="train.py")
    assert _walltime_note(no_walltime, "polaris", tmp_path) == ""  # nothing to scale
    same = JobIntent(source_cluster="perlmutter", nodes=2, gpus_per_node=4, world_size=8, entrypoint="train.py",
                     walltime="02:00:00")
    assert _walltime_note(same, "polaris", tmp_path) == ""  # 8 A100-SXM4-40GB on both
    assert get_profile("polaris").gpu_model == get_profile("perlmutter").gpu_model
