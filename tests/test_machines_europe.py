"""The five European machines profiled for issue 17 item 6 (LUMI-G, CSCS Alps Daint, JUWELS Booster,
JUPITER, Leonardo Booster): each takes the six forms of a job (DDP, FSDP, DeepSpeed, Accelerate, one
GPU, a generic torch.distributed program) with its static checks passing, writes what its center
documents (LUMI's AI container and CPU masks, the Alps uenv, JSC's InfiniBand rendezvous name,
Leonardo's partition plus QOS), recognises its own scripts and no one else's, and ports of corpus
scripts train the mini-app on the local two-node cluster (8 ranks).

The local cluster stands in for what only the sites have, in the ports' text and nowhere else
(_fit_here): no `singularity` (a stand-in runs the command in place), no uenv Slurm plugin (its two
#SBATCH options are dropped), no InfiniBand host names (JSC's "<host>i" becomes the host), 4 GPUs per
node where LUMI has 8 GCDs (its ports run 4 ranks per node here)."""

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from machines import CASES, FORMS, corpus_case, example, port_to, read_case  # noqa: F401 - example is a fixture
from test_verify_generated import CONCURRENT_JOBS, JOB_TIMEOUT, Case, failures
from venvs import nested_venv

from maple_ci.verify import miniapp_for
from maple_ci.verify.slurm import verify_slurm

NEW = ["lumi", "daint", "juwelsbooster", "jupiter", "leonardo"]


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("cluster", NEW)
def test_each_european_machine_takes_the_six_forms_with_static_checks_passing(example, cluster, form, tmp_path):
    overrides, template = FORMS[form]
    result = port_to(example, cluster, tmp_path, **overrides)
    errors = [f"{c.name}: {c.message}" for c in result.checks if not c.ok and c.severity == "error"]
    assert result.status == "ok" and not errors, (result.reason, errors)
    assert result.template == cluster + template


def _directives(script: str) -> list[str]:
    return [line[len("#SBATCH "):] for line in script.splitlines() if line.startswith("#SBATCH ")]


LUMI_MASKS = ("0x00fe000000000000,0xfe00000000000000,0x0000000000fe0000,0x00000000fe000000,"
              "0x00000000000000fe,0x000000000000fe00,0x000000fe00000000,0x0000fe0000000000")


def test_lumi_runs_each_gcd_in_the_ai_container_with_the_guides_cpu_masks(example, tmp_path):
    # LUMI AI guide run_ddp_srun.sh: 8 tasks x 7 cores, --cpu-bind masks, singularity run $SIF after
    # the bindings module; RANK/LOCAL_RANK exported inside the container.
    script = port_to(example, "lumi", tmp_path, framework="deepspeed", strategy="zero3", account="project_465000123").script
    assert {"--account=project_465000123", "--partition=standard-g", "--gpus-per-node=8",
            "--ntasks-per-node=8", "--cpus-per-task=7"} <= set(_directives(script))
    assert re.search(r"^module use /appl/local/laifs/modules\nmodule load lumi-aif-singularity-bindings$", script, re.M)
    launch = re.search(r"^srun [^\n]*", script, re.M).group(0)
    assert f"--cpu-bind=mask_cpu:{LUMI_MASKS}" in launch and launch.endswith('singularity run "$SIF" \\')


def test_lumi_torchrun_form_is_one_task_per_node_with_all_56_cores(example, tmp_path):
    script = port_to(example, "lumi", tmp_path).script
    assert "--cpus-per-task=56" in _directives(script)
    assert re.search(r'^srun [^\n]*--ntasks-per-node=1 --cpus-per-task=56 singularity run "\$SIF" \\\n\s+torchrun '
                     r'--nnodes="\$NNODES" --nproc_per_node=8', script, re.M)
    assert "mask_cpu" not in script  # the masks describe 8 tasks per node only


def test_daint_mounts_the_pytorch_uenv_and_sets_cscs_nccl_variables(example, tmp_path):
    script = port_to(example, "daint", tmp_path, account="g152").script
    sbatch = _directives(script)
    assert {"--account=g152", "--partition=normal", "--uenv=pytorch/v2.8.0:/user-environment",
            "--view=default"} <= set(sbatch)
    for line in ("export NCCL_NET='AWS Libfabric'", "export NCCL_PROTO='^LL128'", "export FI_CXI_RX_MATCH_MODE=software"):
        assert line in script.splitlines()


def test_juwels_booster_meets_at_the_first_nodes_infiniband_name(example, tmp_path):
    script = port_to(example, "juwelsbooster", tmp_path, framework="deepspeed", strategy="zero3").script
    assert 'MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)i"' in script.splitlines()
    assert {"--partition=booster", "--gres=gpu:4", "--cpus-per-task=24"} <= set(_directives(script))
    # JUPITER's GH200 nodes take the plain host name (JSC's CARAML) and 72 Grace cores per GPU
    jupiter = port_to(example, "jupiter", tmp_path / "j", framework="deepspeed", strategy="zero3").script
    assert "head -n 1)i" not in jupiter and "--cpus-per-task=72" in _directives(jupiter)


def test_leonardo_asks_its_booster_partition_and_a_qos(example, tmp_path):
    script = port_to(example, "leonardo", tmp_path, account="EUHPC_A01_001").script
    assert {"--account=EUHPC_A01_001", "--qos=normal", "--partition=boost_usr_prod", "--gres=gpu:4"} <= set(
        _directives(script))
    debug = port_to(example, "leonardo", tmp_path / "d", walltime="00:20:00", nodes=1, queue="boost_qos_dbg").script
    assert "--qos=boost_qos_dbg" in _directives(debug)



def test_each_european_machine_has_corpus_scripts_that_read_as_it():
    for cluster in NEW:
        labelled = [c for c in CASES if c["expect"]["source_cluster"] == cluster]
        assert len(labelled) >= 2, cluster


@pytest.mark.parametrize("case", [c for c in CASES if c["expect"]["source_cluster"] not in NEW],
                         ids=lambda c: str(c["file"]))
def test_the_european_signatures_claim_no_other_machines_script(case):
    assert read_case(case).source_cluster not in NEW


# --- mini-app runs on the local cluster (2 nodes x 4 GPUs, 128 CPUs each) ---------------------------

# Five corpus scripts of different launchers: LUMI's per-GCD srun in a container, JSC's torchrun per
# node, Accelerate, Megatron with TP x PP, and CSCS's uenv srun.
SOURCES = ["centers/lumi/run_ddp_srun.sh", "europe/juwelsbooster/torchrun_jsc.sbatch",
           "worldwide/jeanzay-a100/accelerate_multinode.slurm", "centers/deltaai/megatron_tp.slurm",
           "europe/daint/uenv_ddp.sbatch"]
# A stand-in for `singularity run IMAGE CMD...`: checks the form LUMI's ports use, runs CMD in place.
SINGULARITY = """#!/bin/bash
# maple-ci test stand-in for SingularityCE: `singularity run|exec IMAGE CMD...` runs CMD here.
case "$1" in run|exec) ;; *) echo "singularity stand-in: unsupported command $1" >&2; exit 2 ;; esac
[ -n "$2" ] || { echo "singularity stand-in: no image" >&2; exit 2; }
shift 2
exec "$@"
"""


def _corpus_port(source: str, cluster: str, out: Path, master_port: int) -> tuple[str, str]:
    intent = read_case(corpus_case(source))
    result = port_to(intent, cluster, out / cluster, nodes=2, gpus_per_node=4, world_size=8)
    assert result.status == "ok", (source, cluster, result.reason)
    script, count = re.subn(r"(?m)^export MASTER_PORT=\d+$", f"export MASTER_PORT={master_port}", result.script)
    assert count == 1
    return _fit_here(script), miniapp_for(intent.framework, intent.strategy)


# LUMI's nodes have 8 GCDs, the local ones 4 GPUs: its ports' per-node sizes become 4 here (every
# form the templates write), so the 2 local nodes run 8 ranks, each with a device of its own.
EIGHT_PER_NODE = [(r"--ntasks-per-node=8\b", "--ntasks-per-node=4"), (r"--nproc_per_node=8\b", "--nproc_per_node=4"),
                  (r"--gpus-per-node=8\b", "--gpus-per-node=4"), (r"\* 8\)\)", "* 4))"), (r"/ 8\)\)", "/ 4))"),
                  (r"LOCAL_WORLD_SIZE=8\b", "LOCAL_WORLD_SIZE=4")]


def _fit_here(script: str) -> str:
    """What only the sites have (module docstring): the uenv options go, JSC's InfiniBand name is the
    host's own, LUMI's 8 ranks per node become 4, and a GH200 node's 288 Grace cores the local 128."""
    for pattern, local in EIGHT_PER_NODE:
        script = re.sub(pattern, local, script)
    script = re.sub(r"(?m)^#SBATCH --(uenv|view)=.*\n", "", script)
    script = script.replace('head -n 1)i"', 'head -n 1)"')
    script = re.sub(r"--cpus-per-task=288\b", "--cpus-per-task=128", script)
    return re.sub(r"--cpus-per-task=72\b", "--cpus-per-task=32", script)


def _run(script: str, miniapp: str, workdir: Path, cluster, venv: str, env: dict):
    workdir.mkdir(parents=True)
    path = workdir / "job.sbatch"
    path.write_text(script.replace("/opt/venvs/train", venv))
    return verify_slurm(path, miniapp=miniapp, timeout=JOB_TIMEOUT, env=env, workdir=workdir,
                        max_gpus_per_node=cluster.gpus_per_node)


@pytest.mark.cluster
def test_ports_of_five_corpus_scripts_train_the_miniapp_on_each_european_machine(slurm_cluster, tmp_path,
                                                                                 free_port, monkeypatch):
    import os

    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path / "maple-data"))
    venv = tmp_path / "venv"  # Daint's/JUPITER's user venv (DeepSpeed, Accelerate), over this torch
    nested_venv(venv)
    stand_ins = tmp_path / "bin"
    stand_ins.mkdir()
    (stand_ins / "singularity").write_text(SINGULARITY)
    (stand_ins / "singularity").chmod(0o755)
    env = dict(slurm_cluster.job_env)
    env["PATH"] = f"{stand_ins}{os.pathsep}{env.get('PATH', os.environ['PATH'])}"
    every = [(cluster, source) for cluster in NEW for source in SOURCES]
    ported = {pair: _corpus_port(pair[1], pair[0], tmp_path / "ported" / str(i), free_port())
              for i, pair in enumerate(every)}  # every port passes its static checks
    # Each source trains once and each machine at least once (the suite's time budget: one job ~40 s).
    runs = [(c, s) for c, s in every if (SOURCES.index(s) - NEW.index(c)) % len(NEW) == 0]
    ported = [ported[pair] for pair in runs]
    with ThreadPoolExecutor(CONCURRENT_JOBS) as pool:
        results = list(pool.map(lambda i: _run(*ported[i], tmp_path / "jobs" / str(i), slurm_cluster, str(venv), env),
                                range(len(runs))))
    report = {f"{source} -> {cluster}": failures(Case(cluster, ported[i][1], 8), results[i])
              for i, (cluster, source) in enumerate(runs)}
    assert not any(report.values()), "\n".join(f"{k}: {'; '.join(v)}" for k, v in report.items() if v)
