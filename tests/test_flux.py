"""Flux as source and target (issue 17 item 5): #flux: directives as flux batch reads them (RFC 36
sentinels, minutes or Flux durations), flux run lines read as the ranks they start, ports to El
Capitan and Tuolumne for every template family, and a port run through the Flux path.

The run uses tests/cluster/flux/flux, a STAND-IN for Flux (flux-core has no Debian 12 package and
PyPI's "flux-core" is another project): it parses Flux's own option grammar for flux batch, flux run
and flux hostlist, refuses what Flux refuses, and starts the ranks as local processes with the
FLUX_* variables a job's tasks get. It does not schedule; what it shows is that the generated script
is valid Flux and its ranks rendezvous and train."""

import os
import re
import subprocess
from pathlib import Path

import pytest

from maple_ci import schedulers
from maple_ci.errors import MapleError
from maple_ci.extract import extract_script
from maple_ci.launchers import grammar, parse_options
from maple_ci.miniapp_result import parse_result
from maple_ci.schedulers.jobvars import translate
from maple_ci.verify.substitute import resolve_miniapp, substitute_entrypoint

FLUX = schedulers.get("flux")
STAND_IN = Path(__file__).parent / "cluster" / "flux"
SINGLE = {"nodes": 1, "gpus_per_node": 1, "world_size": 1, "launcher": "python"}  # a one-GPU source
FAMILIES = [("pytorch", "ddp", {}), ("pytorch", "fsdp", {}), ("deepspeed", "zero3", {}), ("accelerate", "ddp", {}),
            ("pytorch", "single", SINGLE), ("pytorch", None, {})]


@pytest.mark.parametrize("sentinel", ["#flux:", "# flux:", "#FLUX:", "# FLUX:"])
def test_every_sentinel_flux_batch_accepts_is_read(sentinel):
    d = FLUX.read(f"#!/bin/bash\n{sentinel} -N 4 -n 16 -g 1  # a comment\n{sentinel} # -N 8 (disabled)\n"
                  f"{sentinel} -t 1.5h\nflux run hostname\n")
    assert (d.nodes, d.ntasks, d.gpus_per_node, d.walltime) == (4, 16, 4, "01:30:00")


@pytest.mark.parametrize("value, walltime", [("90", "01:30:00"), ("90m", "01:30:00"), ("2h", "02:00:00"),
                                             ("1d", "24:00:00"), ("45s", "00:00:45"), ("0.5h", "00:30:00")])
def test_time_limits_are_minutes_or_flux_durations(value, walltime):
    assert FLUX.walltime(value) == walltime


def test_an_hh_mm_ss_time_limit_is_refused_as_flux_refuses_it():
    with pytest.raises(MapleError, match="line 2: --time-limit .*not a Flux time limit"):
        FLUX.read("#!/bin/bash\n#flux: -t 01:00:00\nflux run hostname\n")


def test_long_forms_bank_and_what_a_port_does_not_carry():
    d = FLUX.read("#!/bin/bash\n#flux: --nodes=2 --time-limit=30m --bank=guests --queue=pdebug\n"
                  "#flux: --setattr=gpumode=TPX --output=run.{{id}}.out\nflux run hostname\n")
    assert (d.nodes, d.walltime, d.account, d.queue) == (2, "00:30:00", "guests", "pdebug")
    assert d.dropped == ["--setattr=gpumode=TPX", "--output=run.{{id}}.out"]
    assert FLUX.read("#!/bin/bash\n#flux: -N1 -B <bank>\nflux run true\n").account is None  # a placeholder


def test_a_fix_keeps_the_scripts_sentinel_and_writes_a_flux_duration():
    script = "#!/bin/bash\n# flux: -N 2\n# flux: -q pbatch\nflux run -N2 hostname\n"
    fixed = FLUX.set_option(script, "--time-limit", "04:00:00")  # a fix gives HH:MM:SS
    assert "# flux: --time-limit=240m\n" in fixed and "#flux:" not in fixed  # mixed sentinels: flux batch refuses
    assert FLUX.read(fixed).walltime == "04:00:00"


def test_flux_job_variables_translate_both_ways():
    assert translate("$SLURM_PROCID/$SLURM_JOB_ID", "flux", 4) == "$FLUX_TASK_RANK/$FLUX_JOB_ID"
    assert translate("${FLUX_JOB_NNODES}", "slurm", 4) == "${NNODES}"
    assert translate("$FLUX_JOB_ID", "pbs", 4) == "$PBS_JOBID"


@pytest.mark.parametrize("launch, nodes, per_node, world, launcher", [
    ("flux run -N2 -n8 --exclusive --gpus-per-task=1 -ofastload=on python train.py", 2, 4, 8, "flux"),
    ("flux run -N 2 --tasks-per-node=4 -o gpu-affinity=per-task python train.py", 2, 4, 8, "flux"),
    ("flux run -N 2 -n 2 -o fastload=on torchrun --nnodes 2 --nproc_per_node 4 train.py", 2, 4, 8, "torchrun"),
])
def test_flux_run_lines_read_as_the_ranks_they_start(launch, nodes, per_node, world, launcher):
    intent = extract_script(f"#!/bin/bash\n#flux: -N 2\n#flux: -t 1h\nMASTER_ADDR=$(flux hostlist -l -n 0)\n{launch}\n")
    assert (intent.scheduler, intent.launcher, intent.entrypoint) == ("flux", launcher, "train.py")
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (nodes, per_node, world)


def test_only_flux_run_and_submit_start_ranks():
    spec = grammar("flux")
    assert parse_options(["run", "-N2", "-n8", "python", "t.py"], spec) == ({"nodes": ["2"], "ntasks": ["8"]}, ["python", "t.py"])
    assert parse_options(["hostlist", "-l", "-n", "0"], spec) == ({}, [])  # MASTER_ADDR=$(flux hostlist ...) is no launch


@pytest.mark.parametrize("cluster", ["elcapitan", "tuolumne"])
@pytest.mark.parametrize("framework, strategy, overrides", FAMILIES)
def test_every_family_ports_to_the_llnl_mi300a_machines(port, cluster, framework, strategy, overrides):
    script = port(cluster, framework=framework, strategy=strategy, **overrides)  # the fixture asserts status ok
    assert script.splitlines()[1:] and "#flux: --nodes=" in script and "#SBATCH" not in script
    back = extract_script(script)
    assert (back.scheduler, back.entrypoint) == ("flux", "train.py")
    assert "--setattr=rdzv_get_en=0" in script  # LLNL's Slingshot setting on every flux run


def _stand_in(tmp_path: Path, script: str, env: dict) -> subprocess.CompletedProcess:
    path = tmp_path / "job.flux"
    path.write_text(script)
    env = {**env, "PATH": f"{STAND_IN}{os.pathsep}{env['PATH']}"}
    return subprocess.run(["flux", "batch", "--output=job.out", str(path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_stand_in_refuses_what_flux_refuses(tmp_path):
    mixed = "#!/bin/bash\n#flux: -N 1\n# flux: -t 5\nhostname\n"
    run = _stand_in(tmp_path, mixed, dict(os.environ))
    assert run.returncode != 0 and "sentinel changed" in run.stderr
    both = "#!/bin/bash\n#flux: -N 2\nflux run -N 2 --tasks-per-node=2 -g 1 true\n"  # per-resource with per-task
    assert _stand_in(tmp_path, both, dict(os.environ)).returncode != 0
    ranks = ("#!/bin/bash\n#flux: -N 2\nflux run -N 2 --tasks-per-node=4 --gpus-per-node=4 -o gpu-affinity=per-task "
             "bash -c 'echo $FLUX_TASK_RANK/$FLUX_JOB_SIZE/$FLUX_TASK_LOCAL_ID/$CUDA_VISIBLE_DEVICES'\n")
    assert _stand_in(tmp_path, ranks, dict(os.environ)).returncode == 0
    lines = sorted((tmp_path / "job.out").read_text().split())
    assert lines == sorted(f"{r}/8/{r % 4}/{r % 4}" for r in range(8))


@pytest.mark.cluster
def test_a_port_to_el_capitan_trains_through_the_flux_path(port, slurm_cluster, master_port, tmp_path):
    # one node: 4 ranks importing torch on this 2-core machine; the 2-node layout is the test above
    script = port("elcapitan", master_port=master_port, nodes=1)
    run = _stand_in(tmp_path, substitute_entrypoint(script, resolve_miniapp("ddp")), slurm_cluster.job_env)
    output = (tmp_path / "job.out").read_text()
    result = parse_result(output)
    assert run.returncode == 0 and result and result["ok"], output[-3000:]
    assert result["world_size"] == 4 and re.search(r"(?m)^flux run -N \"\$NNODES\" --tasks-per-node=", script)
