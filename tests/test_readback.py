"""The read-back gate (issue 16, item 3): every port is read back by the reader that read its
source; a port whose launch line runs another program, other arguments, another process model,
another size or without the variables its program was given fails its checks and names the
difference. Real extraction, templates and retrieval throughout."""

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from maple_ci.extract import extract_script
from maple_ci.library import get_template
from maple_ci.paths import templates_dir
from maple_ci.port import port_intent
from maple_ci.process_model import forced_change
from maple_ci.profiles import get_profile
from maple_ci.synthesize import render
from maple_ci.verify.static import checks_ok, static_checks

# One rank per GPU started by srun; the program reads MASTER_ADDR and MASTER_PORT from the job.
SOURCE = """#!/bin/bash
#SBATCH -N 2
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-node=4
#SBATCH -t 01:00:00
export MASTER_ADDR=$(hostname)
export MASTER_PORT=29500
srun python train.py --epochs 10 --data "$SCRATCH/d"
"""
# One torchrun per node forking a DDP worker per GPU.
TORCHRUN = """#!/bin/bash
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
#SBATCH -t 01:00:00
srun torchrun --nnodes=2 --nproc_per_node=4 --rdzv_backend=c10d --rdzv_endpoint=$(hostname):29500 train.py --lr 0.1
"""


@pytest.fixture(autouse=True)
def data_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path_factory.getbasetemp() / "readback-data"))


def _port(source: str, cluster: str, tmp_path):
    intent = extract_script(source)
    result = port_intent(intent, [cluster], "job.sh", tmp_path, source_text=source)[0]
    return intent, result


def _recheck(script: str, intent, result, source: str = SOURCE):
    return static_checks(script, intent, get_profile(result.cluster), get_template(result.template), source)


def _failed(checks, name: str):
    return [c for c in checks if c.name == f"readback:{name}" and not c.ok and c.severity == "error"]


def test_a_faithful_port_passes_every_readback_check(tmp_path):
    _, result = _port(SOURCE, "perlmutter", tmp_path)
    gate = [c for c in result.checks if c.name.startswith("readback:")]
    assert {c.name for c in gate} >= {"readback:program", "readback:arguments", "readback:process-model",
                                      "readback:ranks", "readback:world-size", "readback:environment"}
    assert all(c.ok for c in gate), [c.message for c in gate if not c.ok]
    assert result.status == "ok"


def test_a_port_that_runs_another_program_fails_and_names_both(tmp_path):
    intent, result = _port(SOURCE, "perlmutter", tmp_path)
    edited = result.script.replace("python train.py", "python eval.py")
    checks = _recheck(edited, intent, result)
    assert not checks_ok(checks)
    [failure] = _failed(checks, "program")
    assert "'eval.py'" in failure.message and "'train.py'" in failure.message


def test_a_port_that_drops_an_argument_fails_and_names_it(tmp_path):
    intent, result = _port(SOURCE, "perlmutter", tmp_path)
    edited = result.script.replace(" --epochs 10", "")
    [failure] = _failed(_recheck(edited, intent, result), "arguments")
    assert "'--epochs'" in failure.message


def test_a_port_that_loses_a_variable_the_program_reads_fails(tmp_path):
    intent, result = _port(SOURCE, "perlmutter", tmp_path)
    edited = "\n".join(line for line in result.script.splitlines() if "MASTER_ADDR" not in line) + "\n"
    [failure] = _failed(_recheck(edited, intent, result), "environment")
    assert "MASTER_ADDR" in failure.message


def test_a_port_that_starts_another_size_fails(tmp_path):
    intent, result = _port(SOURCE, "perlmutter", tmp_path)
    edited = result.script.replace('srun --nodes="$NNODES" --ntasks-per-node=4', 'srun --nodes="$NNODES" --ntasks-per-node=2')
    assert edited != result.script
    checks = _recheck(edited, intent, result)
    assert _failed(checks, "ranks") and _failed(checks, "world-size")


def test_a_process_model_the_target_does_not_force_fails(tmp_path):
    """Polaris has a torchrun DDP template, so rendering the per-device one for a torchrun source
    changes the process model without a rule: a failed check, and `maple port` would say failed."""
    intent = extract_script(TORCHRUN)
    template, profile = get_template("polaris-pytorch-ddp"), get_profile("polaris")
    assert forced_change(intent, template) is None
    script = render(intent, profile, template, "job.sh", tmp_path)
    [failure] = _failed(static_checks(script, intent, profile, template, TORCHRUN), "process-model")
    assert "one launcher per node (torchrun)" in failure.message and "one rank per device (mpiexec)" in failure.message


def test_a_process_model_the_target_forces_is_said_in_the_header_and_passes(tmp_path):
    """OLCF runs PyTorch on Frontier as one srun rank per GCD; the frontier templates have no
    torchrun one, so a torchrun source becomes per-device there, and the header says so."""
    intent, result = _port(TORCHRUN, "frontier", tmp_path)
    assert forced_change(intent, get_template(result.template)) == "one rank per device"
    assert "runs pytorch only as one rank per device (srun)" in result.script
    model = next(c for c in result.checks if c.name == "readback:process-model")
    assert model.ok and "the header says so" in model.message


def test_maple_port_exits_1_when_a_template_drops_the_arguments(tmp_path):
    """A template library whose launch line forgets the program's arguments: `maple port` writes
    the scripts, reports the failed read-back check naming the lost arguments and exits 1."""
    library = shutil.copytree(templates_dir(), tmp_path / "templates")
    launch = library / "launch" / "_launch.j2"
    dropped = launch.read_text().replace("{% for word in args %} {{ word|arg(arrays) }}{% endfor %}", "")
    assert dropped != launch.read_text()
    launch.write_text(dropped)
    source = tmp_path / "job.sh"
    source.write_text(SOURCE)
    env = {**os.environ, "MAPLE_TEMPLATES_DIR": str(library), "MAPLE_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "200"}
    run = subprocess.run([sys.executable, "-m", "maple_ci", "port", str(source), "--to", "perlmutter",
                          "--out", str(tmp_path / "out")], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    output = " ".join((run.stdout + run.stderr).split())
    assert "readback:arguments" in output and "'--epochs'" in output


def test_the_deepspeed_config_a_port_adds_is_said_and_accepted_and_nothing_else(tmp_path):
    """A program the user ports as DeepSpeed (`--framework deepspeed`) whose arguments name no config
    gets --deepspeed_config from the port (a minimal ZeRO-3 file it writes): the header says so and
    the gate accepts those two words only."""
    source = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=4\n#SBATCH -t 01:00:00\ntorchrun --nproc_per_node 4 train.py --epochs 3\n"
    intent = replace(extract_script(source), framework="deepspeed")
    result = port_intent(intent, ["polaris"], "job.sh", tmp_path, source_text=source)[0]
    assert "passes --deepspeed_config with a minimal ZeRO-3 config it writes" in result.script
    assert next(c for c in result.checks if c.name == "readback:arguments").ok
    edited = result.script.replace('--deepspeed_config "$DS_CONFIG"', '--deepspeed_config "$DS_CONFIG" --zero 2')
    [failure] = _failed(_recheck(edited, intent, result, source), "arguments")
    assert "'--zero'" in failure.message


def test_a_program_the_deepspeed_launcher_ran_without_a_config_gets_none_added(tmp_path):
    """`deepspeed train.py --epochs 3`: DeepSpeed's launcher passes the program its arguments as
    given, so a program that ran with no --deepspeed_config builds its own config; the port runs it
    with the same arguments, writes no ZeRO-3 config of its own and says nothing about one."""
    source = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=4\n#SBATCH -t 01:00:00\ndeepspeed train.py --epochs 3\n"
    intent, result = _port(source, "polaris", tmp_path)
    assert result.status == "ok" and "--deepspeed_config" not in result.script
    assert "ds_config.maple.json" not in result.script and "name no DeepSpeed config" not in result.script
    assert extract_script(result.script).script_args == ["--epochs", "3"]


def test_maple_verify_reruns_the_gate_from_the_record_the_port_wrote(tmp_path):
    """`maple port` writes the gate's inputs (the source's intent with the user's options, target,
    template) into the port's header, and no file beside it; `maple verify` on an edited port that
    runs another program fails with the gate's difference and exit 1, before any job; the
    untouched port passes the gate."""
    from maple_ci.port import write_results
    from maple_ci.verify.record import gate_failures, load_record

    intent, result = _port(SOURCE, "perlmutter", tmp_path)
    write_results([result], tmp_path)
    port = Path(result.path)
    assert [p.name for p in port.parent.iterdir()] == [port.name]
    record = load_record(port, port.read_text())
    assert record.legacy is None and gate_failures(port.read_text(), record) == []
    port.write_text(port.read_text().replace("python train.py", "python eval.py"))
    [failure] = gate_failures(port.read_text(), load_record(port, port.read_text()))
    assert failure.startswith("readback:program") and "'eval.py'" in failure
    env = {**os.environ, "MAPLE_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "200"}
    run = subprocess.run([sys.executable, "-m", "maple_ci", "verify", str(port), "--backend", "local"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 1 and "readback:program" in " ".join(run.stderr.split()), run.stdout + run.stderr


def test_a_program_path_from_pwd_is_carried_as_the_working_directory(tmp_path):
    """`pwd`/train.py and $(pwd) print $PWD: the port writes "${PWD}/train.py" (no substitution from
    the script is run), and the entrypoint and argument checks read it as the source's word."""
    source = SOURCE.replace("srun python train.py --epochs 10", "srun python `pwd`/train.py --epochs 10 --out $(pwd)/o")
    _, result = _port(source, "polaris", tmp_path)
    assert '"${PWD}/train.py" --epochs 10' in result.script and '"${PWD}/o"' in result.script
    assert result.status == "ok", [c.message for c in result.checks if not c.ok]
