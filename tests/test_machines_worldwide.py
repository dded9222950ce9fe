"""The six machines profiled for issue 17 item 6 (MareNostrum 5 ACC, Jean Zay H100 and A100,
Isambard-AI, ABCI 3.0, NCI Gadi): each takes the six forms of a job (DDP, FSDP, DeepSpeed, Accelerate,
one GPU, a generic torch.distributed program) with its static checks passing, writes the requests its
center enforces (CPUs per GPU, the account form, Gadi's ncpus/ngpus), recognises its own scripts and
no one else's, and ports of corpus scripts to the Slurm machines train the mini-app on the local
two-node cluster (8 ranks).

Jean Zay A100's 8-GPU nodes do not fit the local 4-GPU nodes. ABCI 3.0 and Gadi launch with Open
MPI's mpirun (HPC-X; NCI's openmpi), whose grammar the local PBS emulation (MPICH Hydra) does not
take: their mini-app runs are not done here."""

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from machines import CASES, FORMS, corpus_case, example, port_to, read_case  # noqa: F401 - example is a fixture
from test_verify_generated import CONCURRENT_JOBS, JOB_TIMEOUT, Case, failures
from venvs import nested_venv

from maple_ci.verify import miniapp_for
from maple_ci.verify.slurm import verify_slurm

NEW = ["marenostrum5", "jeanzay-h100", "jeanzay-a100", "isambard-ai", "abci3", "gadi"]


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("cluster", NEW)
def test_each_new_machine_takes_the_six_forms_with_static_checks_passing(example, cluster, form, tmp_path):
    overrides, template = FORMS[form]
    result = port_to(example, cluster, tmp_path, **overrides)
    errors = [f"{c.name}: {c.message}" for c in result.checks if not c.ok and c.severity == "error"]
    assert result.status == "ok" and not errors, (result.reason, errors)
    assert result.template == cluster + template


def _directives(script: str, prefix: str) -> list[str]:
    return [line[len(prefix) + 1:] for line in script.splitlines() if line.startswith(prefix + " ")]


@pytest.mark.parametrize("cluster, per_gpu_task", [("marenostrum5", 20), ("jeanzay-h100", 24), ("jeanzay-a100", 8),
                                                   ("isambard-ai", 72)])
def test_one_task_per_gpu_gets_the_cpus_per_gpu_the_site_enforces(example, cluster, per_gpu_task, tmp_path):
    # MN5's submit filter wants 20 CPUs per GPU, IDRIS's scripts 24 (H100) and 8 (A100) with
    # --hint=nomultithread, BriCS 72 Grace cores per GH200: a per-GPU task asks exactly that.
    script = port_to(example, cluster, tmp_path, framework="deepspeed", strategy="zero3").script
    sbatch = _directives(script, "#SBATCH")
    assert f"cpus-per-task={per_gpu_task}" in " ".join(sbatch), sbatch
    assert re.search(rf"srun [^\n]*--cpus-per-task={per_gpu_task}\b", script)


@pytest.mark.parametrize("cluster, pool", [("jeanzay-h100", "h100"), ("jeanzay-a100", "a100")])
def test_jean_zay_ports_name_their_partition_and_its_hour_pool(example, cluster, pool, tmp_path):
    script = port_to(example, cluster, tmp_path, account=f"abc@{pool}").script
    sbatch = _directives(script, "#SBATCH")
    assert f"--account=abc@{pool}" in sbatch and f"--constraint={pool}" in sbatch
    assert "--hint=nomultithread" in sbatch
    # arch/<gpu> selects the partition's software stack and must precede the PyTorch module
    assert re.search(rf"^module load arch/{pool} pytorch-gpu/", script, re.M)


def test_abci_asks_a_group_with_p_and_whole_rt_hf_nodes(example, tmp_path):
    script = port_to(example, "abci3", tmp_path, account="gaa12345").script
    assert _directives(script, "#PBS")[1:5] == ["-P gaa12345", "-q rt_HF", "-l select=2", "-l walltime=02:00:00"]
    assert "-A " not in "\n".join(_directives(script, "#PBS"))
    # job-execution.md: the module command exists only after this line in a batch job
    assert script.index("source /etc/profile.d/modules.sh") < script.index("module load")


@pytest.mark.parametrize("nodes, gpus", [(2, 4), (1, 1)])
def test_gadi_asks_gpus_and_twelve_cpus_each_without_select(example, nodes, gpus, tmp_path):
    overrides = {"nodes": nodes, "gpus_per_node": gpus, "world_size": nodes * gpus}
    if gpus == 1:
        overrides |= {"strategy": "single", "launcher": "python"}
    pbs = _directives(port_to(example, "gadi", tmp_path, account="ab12", **overrides).script, "#PBS")
    total = nodes * gpus
    assert [f"-l ngpus={total}", f"-l ncpus={12 * total}", f"-l mem={95 * total}GB"] == pbs[3:6], pbs
    assert "-P ab12" in pbs and not any("select=" in d for d in pbs)



def test_each_new_machine_has_corpus_scripts_that_read_as_it():
    for cluster in NEW:
        labelled = [c for c in CASES if c["expect"]["source_cluster"] == cluster]
        assert len(labelled) >= 2, cluster


@pytest.mark.parametrize("case", [c for c in CASES if c["expect"]["source_cluster"] not in NEW],
                         ids=lambda c: str(c["file"]))
def test_the_new_signatures_claim_no_other_machines_script(case):
    # A bare -C h100 or a "workq" partition is used elsewhere too: only each site's own names count.
    assert read_case(case).source_cluster not in NEW


# --- mini-app runs on the local cluster (2 nodes x 4 GPUs, 128 CPUs each) ---------------------------

# Five corpus scripts of different launchers to each new Slurm machine: per-GPU srun, torchrun per
# node, Accelerate, Megatron-DeepSpeed with TP x PP, and a center's own torchrun style.
SOURCES = ["worldwide/marenostrum5/srun_venv_ddp.sbatch", "worldwide/isambard-ai/torchrun_nccl.sbatch",
           "worldwide/jeanzay-a100/accelerate_multinode.slurm", "centers/deltaai/megatron_tp.slurm",
           "worldwide/jeanzay-h100/bench_fsdp.slurm"]
# Jean Zay A100 nodes hold 8 GPUs, the local ones 4: its 2-node ports are 16 ranks, which the local
# cluster rejects or cannot give a device each, so it is checked statically only (as in test_verify_real).
SLURM_NEW = ["marenostrum5", "jeanzay-h100", "isambard-ai"]


def _corpus_port(source: str, cluster: str, out: Path, master_port: int) -> tuple[str, str]:
    intent = read_case(corpus_case(source))
    result = port_to(intent, cluster, out / cluster, nodes=2, gpus_per_node=4, world_size=8)
    assert result.status == "ok", (source, cluster, result.reason)
    script, count = re.subn(r"(?m)^export MASTER_PORT=\d+$", f"export MASTER_PORT={master_port}", result.script)
    assert count == 1
    return _fit_here(script), miniapp_for(intent.framework, intent.strategy)


# The local nodes have 64 cores (128 hardware threads) and 4 GPUs: Isambard-AI's 72 Grace cores per
# GPU become 32 threads, Jean Zay's 24 cores per GPU (--hint=nomultithread counts cores) become 16.
LOCAL_CPUS = {"288": "128", "72": "32", "96": "64", "24": "16"}


def _fit_here(script: str) -> str:
    """The port with its CPU requests scaled to the local nodes; nothing else changes."""
    return re.sub(r"--cpus-per-task=(288|72|96|24)\b", lambda m: f"--cpus-per-task={LOCAL_CPUS[m[1]]}", script)


def _run(script: str, miniapp: str, workdir: Path, cluster, venv: str):
    workdir.mkdir(parents=True)
    path = workdir / "job.sbatch"
    path.write_text(script.replace("/opt/venvs/train", venv))
    return verify_slurm(path, miniapp=miniapp, timeout=JOB_TIMEOUT, env=cluster.job_env, workdir=workdir,
                        max_gpus_per_node=cluster.gpus_per_node)


@pytest.mark.cluster
def test_ports_of_five_corpus_scripts_train_the_miniapp_on_each_new_slurm_machine(slurm_cluster, tmp_path,
                                                                                 free_port, monkeypatch):
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path / "maple-data"))
    venv = tmp_path / "venv"  # MN5 and Isambard-AI have no PyTorch module: the user's venv, over this torch
    nested_venv(venv)
    every = [(cluster, source) for cluster in SLURM_NEW for source in SOURCES]
    ported = {pair: _corpus_port(pair[1], pair[0], tmp_path / "ported" / str(i), free_port())
              for i, pair in enumerate(every)}  # every port passes its static checks
    # Each source trains once and each machine at least once (the suite's time budget: one job ~40 s).
    runs = [(c, s) for c, s in every if (SOURCES.index(s) - SLURM_NEW.index(c)) % len(SLURM_NEW) == 0]
    ported = [ported[pair] for pair in runs]
    with ThreadPoolExecutor(CONCURRENT_JOBS) as pool:
        results = list(pool.map(lambda i: _run(*ported[i], tmp_path / "jobs" / str(i), slurm_cluster, str(venv)),
                                range(len(runs))))
    report = {f"{source} -> {cluster}": failures(Case(cluster, ported[i][1], 8), results[i])
              for i, (cluster, source) in enumerate(runs)}
    assert not any(report.values()), "\n".join(f"{k}: {'; '.join(v)}" for k, v in report.items() if v)
