"""`maple trace`: real bash on an emulated allocation, stand-ins for the launchers (issue 25 A, B).

The scripts here are written in styles the corpus (tests/data/real) does not hold: arguments that
reach the program through a string, a launch split over continuation lines with the program word on
its own line, torchrun without --nproc_per_node, accelerate options that set the workers' precision.
Each assertion is on what bash made of the script, so none of it depends on maple's static reader.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from maple_ci.errors import MapleError
from maple_ci.trace import trace_script
from maple_ci.trace.compare import compare, gate, header_of

SLURM = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n#SBATCH -t 01:00:00\n"


def script(tmp_path: Path, text: str, name: str = "job.sbatch") -> Path:
    (tmp_path / ".git").mkdir(exist_ok=True)  # the checkout the trace copies
    (tmp_path / "train.py").write_text("import torch\n")
    path = tmp_path / name
    path.write_text(text)
    return path


def test_arguments_through_a_string_reach_every_rank(tmp_path):
    path = script(tmp_path, SLURM + 'set -euo pipefail\nargs="${@}"\n'
                  'srun bash -c "cd . && python train.py ${args} --log-dir logs"\n')
    trace = trace_script(path, args=("--config=big", "--tp", "4"))
    assert len(trace.ranks) == 8
    assert {tuple(r.argv) for r in trace.ranks} == {("python", "train.py", "--config=big", "--tp", "4", "--log-dir", "logs")}
    assert [r.rank for r in trace.ranks] == list(range(8))
    assert {r.node for r in trace.ranks[4:]} == {"n002"}


def test_continuation_lines_with_the_program_word_alone(tmp_path):
    path = script(tmp_path, "#!/bin/bash\n#PBS -l select=2\n#PBS -l walltime=01:00:00\n"
                  "mpiexec \\\n  -n 8 \\\n  --ppn 4 \\\n  python3 \\\n  train.py \\\n  --deepspeed_config ds_config.json\n",
                  name="job.pbs")
    trace = trace_script(path)
    assert trace.ranks[0].argv == ["python3", "train.py", "--deepspeed_config", "ds_config.json"]
    assert trace.ranks[0].env["PALS_RANKID"] == "0" and trace.world() == 8


def test_torchrun_without_nproc_per_node_starts_one_worker(tmp_path):
    path = script(tmp_path, "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=4\ntorchrun --standalone train.py --lr 1\n")
    trace = trace_script(path)
    assert len(trace.ranks) == 1 and trace.ranks[0].env["WORLD_SIZE"] == "1"
    assert trace.ranks[0].program == ["train.py", "--lr", "1"]


def test_accelerate_options_become_the_workers_variables(tmp_path):
    path = script(tmp_path, "#!/bin/bash\n#SBATCH -N 1\naccelerate launch --num_processes 4 --mixed_precision bf16 "
                  "--use_fsdp --fsdp_auto_wrap_policy TRANSFORMER_BASED_WRAP train.py\n")
    trace = trace_script(path)
    assert len(trace.ranks) == 4
    env = trace.ranks[0].env
    assert env["ACCELERATE_MIXED_PRECISION"] == "bf16" and env["FSDP_AUTO_WRAP_POLICY"] == "TRANSFORMER_BASED_WRAP"
    assert env["ACCELERATE_USE_FSDP"] == "true"


def test_set_up_commands_are_recorded_and_not_run(tmp_path):
    path = script(tmp_path, SLURM + "module load pytorch\nsource /opt/site/env.sh\npip install -e .\n"
                  "git clone https://example.invalid/x\nsrun python train.py\n")
    trace = trace_script(path)
    assert ["pip", "install", "-e", "."] in trace.not_run and ["source", "/opt/site/env.sh"] in trace.not_run
    assert not (tmp_path / "x").exists() and len(trace.ranks) == 8


def test_machine_idioms_answer_from_the_allocation(tmp_path):
    path = script(tmp_path, SLURM + 'N=$(nvidia-smi -L | wc -l)\nHEAD=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)\n'
                  'torchrun --nproc_per_node=$N --nnodes=$SLURM_NNODES --rdzv_endpoint=$HEAD:29500 train.py\n')
    trace = trace_script(path, cluster="aurora")
    assert trace.ranks[0].env["LOCAL_WORLD_SIZE"] == "12"  # Aurora: 12 tiles per node
    assert trace.ranks[0].env["MASTER_ADDR"] == "n001"


def test_a_function_and_eval_are_real_bash(tmp_path):
    path = script(tmp_path, SLURM + 'launch() { srun "$@"; }\nCMD="python train.py --seed 1"\neval launch $CMD\n')
    assert trace_script(path).ranks[0].argv == ["python", "train.py", "--seed", "1"]


def test_the_json_output_is_the_trace(tmp_path):
    path = script(tmp_path, SLURM + "srun python train.py\n")
    done = subprocess.run([sys.executable, "-m", "maple_ci", "trace", str(path), "--json"], capture_output=True,
                          text=True, cwd=Path(__file__).parents[1])
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["world"] == 8 and data["ranks"][0]["argv"] == ["python", "train.py"]


# --- the gate ---------------------------------------------------------------------------------------

def test_gate_fails_a_port_that_drops_the_submit_time_arguments(tmp_path):
    source = script(tmp_path, SLURM + 'args="${@}"\nsrun bash -c "python train.py ${args}"\n')
    port = SLURM + "# Note: nothing\nsrun python train.py\n"
    src = trace_script(source, args=("--x=1",))
    dst = trace_script(source, args=("--x=1",), text=port)
    found = compare(src, dst, header_of(port))
    assert [d.kind for d in found] == ["program"] and "--x=1" in found[0].message


def test_gate_fails_a_port_that_changes_the_process_model_silently(tmp_path):
    source = script(tmp_path, "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=4\ntorchrun --standalone train.py\n")
    port = "#!/bin/bash\n#SBATCH -N 1\ntorchrun --standalone --nproc_per_node=4 train.py\n"
    found = compare(trace_script(source), trace_script(source, text=port), header_of(port))
    assert [d.kind for d in found] == ["processes"]
    named = "#!/bin/bash\n# Note: 4 processes per node where the source started 1\n" + port.split("\n", 1)[1]
    assert compare(trace_script(source), trace_script(source, text=named), header_of(named)) == []


def test_gate_fails_a_port_that_drops_a_precision_option(tmp_path):
    source = script(tmp_path, "#!/bin/bash\n#SBATCH -N 1\naccelerate launch --num_processes 4 --mixed_precision bf16 train.py\n")
    port = "#!/bin/bash\n#SBATCH -N 1\naccelerate launch --num_processes 4 train.py\n"
    found = compare(trace_script(source), trace_script(source, text=port), header_of(port))
    assert any(d.kind == "env" and "ACCELERATE_MIXED_PRECISION" in d.message for d in found)


def test_maple_port_with_trace_passes_the_shipped_example():
    root = Path(__file__).parents[1]
    from maple_ci.port import port_intent  # noqa: F401  (the CLI path below uses it)

    done = subprocess.run([sys.executable, "-m", "maple_ci", "port", "examples/perlmutter_torchrun_ddp.sbatch",
                           "--to", "polaris", "frontier", "--trace", "--json", "--out", "/tmp/maple-trace-test"],
                          capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    checks = [c for r in json.loads(done.stdout)["results"] for c in r["checks"] if c["name"] == "trace"]
    assert len(checks) == 2 and all(c["ok"] for c in checks)


def test_gate_marks_a_port_failed_naming_the_difference(tmp_path):
    from maple_ci.port import PortResult

    source = script(tmp_path, SLURM + 'srun python train.py "$@"\n')
    port = SLURM.replace("#!/bin/bash\n", "#!/bin/bash\n# Generated\n") + "srun python train.py\n"
    result = PortResult(cluster="perlmutter", status="ok", script=port)
    [checked] = gate(source, [result], trusted=False)
    assert checked.status == "failed" and "--maple-trace-argument=1" in checked.checks[-1].message


# --- the sandbox (issue 25 F, issue 26 item 9): each attack ends bounded, with no side effect ------

def test_sandbox_has_no_network(tmp_path):
    path = script(tmp_path, "#!/bin/bash\n(echo > /dev/tcp/127.0.0.1/22) 2>/dev/null && echo REACHED || echo none\n"
                  "srun python train.py\n")
    trace = trace_script(path)
    assert trace.ranks  # it ran on, without the network


def test_sandbox_cannot_read_outside_its_copy(tmp_path):
    secret = tmp_path.parent / "secret-outside.txt"
    secret.write_text("TOP-SECRET")
    path = script(tmp_path, f'#!/bin/bash\nX=$(cat {secret} /etc/hostname /root/.bashrc 2>/dev/null)\n'
                  'srun python train.py "$X"\n')
    trace = trace_script(path)
    assert all("TOP-SECRET" not in " ".join(r.argv) for r in trace.ranks)


def test_sandbox_writes_stay_in_the_copy(tmp_path):
    outside = tmp_path.parent / "written-by-trace"
    path = script(tmp_path, f"#!/bin/bash\ntouch {outside} 2>/dev/null; touch inside\nsrun python train.py\n")
    trace_script(path)
    assert not outside.exists() and not (tmp_path / "inside").exists()


def test_a_loop_that_never_ends_is_stopped(tmp_path):
    path = script(tmp_path, "#!/bin/bash\nwhile :; do :; done\n")
    with pytest.raises(MapleError, match="limit"):
        trace_script(path, limits=__import__("maple_ci.trace", fromlist=["Limits"]).Limits(wall_s=3, cpu_s=2))


def test_a_fork_bomb_ends_bounded(tmp_path):
    from maple_ci.trace import Limits

    path = script(tmp_path, "#!/bin/bash\nb() { b | b & }; b\nsrun python train.py\n")
    try:
        trace_script(path, limits=Limits(wall_s=5, processes=64))
    except MapleError as error:
        assert "limit" in str(error)


def test_memory_is_bounded(tmp_path):
    path = script(tmp_path, "#!/bin/bash\nx=$(head -c 2000000000 /dev/zero | tr '\\0' a)\nsrun python train.py\n")
    from maple_ci.trace import Limits

    trace = trace_script(path, limits=Limits(wall_s=20, memory_mb=256))
    # the script's bash hit the address-space limit and stopped; the trace ended, saying why
    assert trace.exit_code != 0 and "allocate" in trace.stderr and trace.seconds < 20


def test_writing_without_end_stops_at_the_copy_s_cap(tmp_path):
    from maple_ci.trace import Limits

    path = script(tmp_path, "#!/bin/bash\nfor i in $(seq 1000); do head -c 4000000 /dev/zero > blob$i || break; done\n"
                  "ls blob* | wc -l > count\nsrun python train.py\n")
    trace = trace_script(path, limits=Limits(wall_s=20, writable_mb=16))
    # the copy's memory file system filled at 16 MiB: the loop ended there, the script went on
    assert "No space left on device" in trace.stderr and trace.ranks
    assert not list(tmp_path.glob("blob*"))


def test_untrusted_content_is_not_traced_without_the_sandbox(tmp_path, monkeypatch):
    monkeypatch.setattr("maple_ci.trace.bwrap", lambda: None)
    path = script(tmp_path, SLURM + "srun python train.py\n")
    with pytest.raises(MapleError, match="bubblewrap"):
        trace_script(path)
    assert trace_script(path, trusted=True).ranks


def test_the_trace_supplies_the_program_static_reading_does_not_find(tmp_path):
    """Issue 25 C: a site's own launcher wrapper hides the program from static reading."""
    from maple_ci.port import port

    (tmp_path / "tf_strategy.py").write_text("import tensorflow as tf\n")
    path = script(tmp_path, "#!/bin/bash\n#PBS -l select=1:ngpus=4\n#PBS -l walltime=01:00:00\n"
                  "cd ${PBS_O_WORKDIR:-.}\nMODE=mirrored\nsite-multinode-run.sh tf_strategy.py --mode $MODE\n", "job.pbs")
    intent, results = port(str(path), ["perlmutter"], tmp_path / "out")
    assert intent.entrypoint == "tf_strategy.py" and intent.script_args == ["--mode", "mirrored"]
    assert any("found by tracing" in note for note in intent.notes)


def test_a_submitted_script_is_traced_with_its_exports(tmp_path):
    script(tmp_path, "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=2\nsrun python train.py --lr $LR\n", "inner.sbatch")
    path = script(tmp_path, "#!/bin/bash\nfor lr in 0.1 0.01; do sbatch --export=ALL,LR=$lr inner.sbatch; done\n", "submit.sh")
    trace = trace_script(path)
    assert {tuple(r.program) for r in trace.ranks} == {("train.py", "--lr", "0.1"), ("train.py", "--lr", "0.01")}
    assert len(trace.submitted) == 2


def test_ssh_per_node_and_a_site_wrapper(tmp_path):
    path = script(tmp_path, SLURM + 'for h in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do\n'
                  '  ssh $h "cd $PWD; site_affinity python3 train.py --node $h" &\ndone\nwait\n')
    trace = trace_script(path)
    assert sorted((r.node, r.program) for r in trace.ranks) == [("n001", ["train.py", "--node", "n001"]),
                                                          ("n002", ["train.py", "--node", "n002"])]


def test_installed_dependencies_are_not_copied_into_the_sandbox(tmp_path):
    """A checkout with its node_modules (tests/github's has thousands of files) still traces."""
    modules = tmp_path / "node_modules" / "pkg"
    modules.mkdir(parents=True)
    for i in range(5001):
        (modules / f"f{i}.js").write_text("")
    path = script(tmp_path, SLURM + "srun python train.py\n")
    assert len(trace_script(path).ranks) == 8
