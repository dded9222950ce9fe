"""What a verification run says about speed (maple_ci/verify/speed.py): the transport NCCL/RCCL
chose, read from real INFO logs of public issues (tests/data/nccl_logs/, each file names its
source); the judgement against a profile's network; a program's loss and throughput lines; and the
bandwidth and step time the mini-app measures for real on the local Slurm cluster (gloo over TCP).

There is no GPU here: where a test needs an NCCL run's result line next to a cited log, it writes
one in the mini-app's own form (miniapps/README.md) as a stand-in for the line a GPU job prints."""

import json
import textwrap
from pathlib import Path

import pytest

from maple_ci.cli import main
from maple_ci.profiles import load_profiles
from maple_ci.verify import run_verification
from maple_ci.verify.speed import FAR_UNDER, _patterns, read_program_metrics, read_transport, with_speed
from maple_ci.verify.substitute import VerifyResult

LOGS = Path(__file__).parent / "data" / "nccl_logs"


def cited(name: str) -> str:
    text = (LOGS / name).read_text()
    assert "# source: https://" in text and "read 2026-11-29" in text  # every excerpt names where it is from
    return text


def nccl_result(busbw: float, hosts: int = 2, world: int = 8) -> str:
    """Stand-in for a GPU mini-app's result line (no GPU here), in the mini-app's own form."""
    rows = [{"bytes": 1 << 28, "time_us": 1000.0, "algbw_gbps": busbw / 1.75, "busbw_gbps": busbw}]
    line = {"ok": True, "miniapp": "ddp", "world_size": world, "ranks_seen": list(range(world)),
            "hostnames": [f"nid{i:06d}" for i in range(hosts)], "loss": 5.5, "backend": "nccl", "device": "cuda:0",
            "step_time_s": 0.05, "allreduce": rows}
    return "MAPLE_MINIAPP_RESULT " + json.dumps(line)


def run_of(log: str) -> VerifyResult:
    from maple_ci.miniapp_result import parse_result

    return VerifyResult(ok=True, backend="slurm", job_id="1", state="COMPLETED", exit_code=0, result=parse_result(log),
                        log=log, message="job 1 ended COMPLETED (exit 0)")


@pytest.mark.parametrize("log, transport", [("socket.log", "socket"), ("ib.log", "ib"), ("rccl_ib.log", "ib"),
                                            ("ib_nccl24.log", "ib"), ("ofi_slingshot.log", "ofi"),
                                            ("ofi_plugin.log", "ofi"),
                                            ("socket_channels.log", "socket")])
def test_the_transport_is_read_from_real_nccl_and_rccl_logs(log, transport):
    found = read_transport(cited(log))
    assert found.name == transport and "NCCL INFO" in found.evidence


def test_a_log_without_nccl_lines_names_no_transport():
    assert read_transport("rank 0 ready\nMAPLE_MINIAPP_RESULT {}\n") is None


def test_any_rank_on_sockets_makes_the_run_a_socket_run():
    mixed = cited("ofi_slingshot.log") + cited("socket.log")
    assert read_transport(mixed).name == "socket"


def test_a_socket_fallback_fails_where_the_profile_expects_the_slingshot_plugin():
    judged = with_speed(run_of(cited("socket.log") + nccl_result(busbw=80.0)), "perlmutter")
    assert not judged.ok
    assert "runs, but over TCP sockets: give NCCL NERSC's OFI plugin" in judged.message
    assert "Using network Socket" in judged.message  # the line it was read from


def test_the_plugin_the_profile_expects_passes():
    judged = with_speed(run_of(cited("ofi_slingshot.log") + nccl_result(busbw=80.0)), "perlmutter")
    assert judged.ok, judged.message
    assert judged.speed.transport.name == "ofi" and judged.speed.expected_busbw_gbps == 100.0


@pytest.mark.parametrize("log", ["ib.log", "rccl_ib.log"])
def test_infiniband_passes_on_an_infiniband_machine_and_sockets_fail_there(log):
    assert with_speed(run_of(cited(log) + nccl_result(busbw=80.0)), "juwelsbooster").ok
    failed = with_speed(run_of(cited("socket.log") + nccl_result(busbw=80.0)), "juwelsbooster")
    assert not failed.ok and "NCCL_IB_DISABLE" in failed.message


def test_bandwidth_far_under_the_line_rate_fails_between_nodes_only():
    low = 0.9 * FAR_UNDER * 100.0  # under the share of Perlmutter's 4 x 25 GB/s
    slow = with_speed(run_of(cited("ofi_slingshot.log") + nccl_result(busbw=low)), "perlmutter")
    assert not slow.ok and "far under the 100.0 GB/s line rate" in slow.message
    one_node = with_speed(run_of(cited("ofi_slingshot.log") + nccl_result(busbw=low, hosts=1)), "perlmutter")
    assert one_node.ok  # within a node the all-reduce crosses NVLink, not the network


def test_the_expected_bandwidth_counts_the_nics_the_ranks_on_a_node_can_use():
    one_rank_per_node = with_speed(run_of(cited("ofi_slingshot.log") + nccl_result(busbw=20.0, world=2)), "perlmutter")
    assert one_rank_per_node.ok and one_rank_per_node.speed.expected_busbw_gbps == 25.0


def test_a_cluster_without_a_network_fact_is_measured_not_judged():
    judged = with_speed(run_of(cited("socket.log") + nccl_result(busbw=1.0)), "aurora")
    assert judged.ok and judged.speed.transport.name == "socket" and judged.speed.expected_transport is None


def test_a_failed_run_stays_failed_and_keeps_its_message():
    failed = run_of(cited("ofi_slingshot.log")).model_copy(update={"ok": False, "message": "job 1 ended FAILED"})
    judged = with_speed(failed, "perlmutter")
    assert not judged.ok and judged.message.startswith("job 1 ended FAILED")


def test_every_profile_network_names_a_known_transport_a_source_and_a_date():
    known = {t["name"] for t in _patterns()["transports"]}
    networks = {name: p.network for name, p in load_profiles().items() if p.network}
    assert {"perlmutter", "polaris", "frontier", "juwelsbooster"} <= set(networks)
    for name, network in networks.items():
        assert network.transport in known, name
        assert network.source.startswith("https://") and network.read, name


@pytest.mark.parametrize("lines, format_, loss, throughput", [
    (["{'loss': 2.5, 'grad_norm': 1.0, 'learning_rate': 5e-05, 'epoch': 0.5}",
      "{'loss': 2.1, 'grad_norm': 0.9, 'learning_rate': 0.0, 'epoch': 1.0}",
      "{'train_runtime': 12.3, 'train_samples_per_second': 45.6, 'train_steps_per_second': 1.2, 'train_loss': 2.3}"],
     "huggingface-trainer", 2.1, 45.6),
    ([" [2025-11-28 18:48:17] iteration       50/    5000 | consumed samples:        51200 | elapsed time per "
      "iteration (ms): 61674.3 | throughput per GPU (TFLOP/s/GPU): 68.2 | learning rate: 1.0E-04 | lm loss: 7.1E+00 |"],
     "megatron-lm", 7.1, 68.2),
    (["iter 0: loss 5.5000, time 120.00ms, mfu -100.00%", "iter 10: loss 4.2500, time 95.50ms, mfu 30.12%"],
     "nanogpt", 4.25, 95.5),
])
def test_a_programs_loss_and_throughput_lines_are_read(lines, format_, loss, throughput):
    found = read_program_metrics("\n".join(["starting", *lines, "done"]))
    assert (found.format, found.loss, found.throughput) == (format_, loss, throughput)


def test_a_program_printing_no_known_format_gets_no_figures():
    assert read_program_metrics("epoch 1 done, accuracy 0.9\n") is None


# --- real runs ---

@pytest.mark.cluster
def test_the_local_clusters_bandwidth_and_step_time_appear_in_maple_verify_json(slurm_cluster, tmp_path, master_port,
                                                                               monkeypatch, capsys):
    script = tmp_path / "job.sbatch"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/bash
        #SBATCH -C gpu
        #SBATCH -N 2
        #SBATCH --ntasks-per-node=1
        export MASTER_ADDR=$(scontrol show hostnames $SLURM_NODELIST | head -n 1)
        srun bash -c 'torchrun --nnodes=2 --nproc_per_node=2 --node_rank=$SLURM_PROCID \\
            --master_addr=$MASTER_ADDR --master_port={master_port} train.py --epochs 3'
        """))
    for name, value in slurm_cluster.job_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)  # sbatch runs here: the job's output is written where the nodes see it
    monkeypatch.setattr("sys.argv", ["maple", "verify", str(script), "--cluster", "perlmutter", "--timeout", "300",
                                     "--json"])
    with pytest.raises(SystemExit) as exited:
        main()
    result = json.loads(capsys.readouterr().out)["result"]
    assert exited.value.code == 0 and result["ok"], result["message"] + "\n" + result["log"]
    speed = result["speed"]
    assert [row["bytes"] for row in speed["allreduce"]] == [1 << 16, 1 << 20, 1 << 22]
    assert all(row["busbw_gbps"] > 0 and row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * 1.5, rel=0.05, abs=2e-3)
               for row in speed["allreduce"])  # 2(n-1)/n for n = 4 ranks
    assert speed["step_time_s"] > 0 and (speed["nodes"], speed["ranks_per_node"]) == (2, 2)
    assert speed["transport"]["name"] == "gloo" and not speed["problems"]  # CPU: NCCL's transport is not judged
    assert speed["expected_transport"] == "ofi" and speed["expected_busbw_gbps"] == 50.0  # 2 ranks: 2 of 4 NICs
    assert f"all-reduce busbw {speed['busbw_gbps']} GB/s" in result["message"]


def test_program_runs_the_scripts_own_program_and_reads_its_lines(tmp_path):
    (tmp_path / "train.py").write_text(
        "for i in range(3):\n    print(f'iter {i}: loss {5.0 - i:.4f}, time {100 + i:.2f}ms', flush=True)\n")
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\ncd {tmp_path}\npython train.py --epochs 3\n")
    result = run_verification("local", script, miniapp=None, timeout=60)
    assert result.ok, result.message + "\n" + result.log
    assert result.result is None and "the script's own program ran (--program), not a mini-app" in result.notes
    assert (result.speed.program.format, result.speed.program.first_loss, result.speed.program.loss) == ("nanogpt", 5.0, 3.0)


def test_program_that_fails_fails_the_verification(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\npython -c 'raise SystemExit(3)'\n")
    result = run_verification("local", script, miniapp=None, timeout=60)
    assert not result.ok and result.exit_code == 3


def test_program_is_refused_where_only_mini_apps_run(tmp_path):
    from maple_ci.errors import MapleError

    with pytest.raises(MapleError, match="--program runs on the slurm and local backends"):
        run_verification("jacamar", tmp_path / "job.sh", miniapp=None, cluster="perlmutter", commit="c" * 40)


def test_program_and_a_mini_app_together_are_a_usage_error(tmp_path, monkeypatch, capsys):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\npython train.py\n")
    monkeypatch.setattr("sys.argv", ["maple", "verify", str(script), "--program", "--miniapp", "ddp", "--backend", "local"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2 and "give one" in capsys.readouterr().err


def test_a_log_line_that_looks_like_markup_is_printed_as_text(capsys):
    from maple_ci.cli_output import print_verified
    from maple_ci.pipeline import Verified

    log = cited("socket.log").replace("Using network Socket", "Using network Socket [/] [bold]") + nccl_result(80.0)
    print_verified(Verified(with_speed(run_of(log), "perlmutter")), json_output=False)
    out = capsys.readouterr().out
    assert "failed" in out and "Using network Socket [/] [bold]" in out and "speed: all-reduce 256 MiB: busbw 80.0 GB/s" in out
