"""Scripts from the real-script corpus (tests/data/real/, issue 9), ported by maple-ci's own pipeline
(extract with the case's folder and its checkout, then port_intent) to a Slurm target with 4 GPUs
per node, really train the mini-app maple-ci picks for the program (miniapp_for) on the local
two-node test cluster: 2 nodes x 4 ranks = 8 ranks, every rank seen, both nodes used. Each case names what its port must show, so a
case cannot quietly stop testing what it is here for (an unpinned container named and replaced by the
site's set-up, the Megatron flags kept, the size taken from the allocation).

Containers: Apptainer and Shifter cannot be installed here. The ports' `apptainer exec ...` and
`shifter --image=... --module=...` lines run through the test cluster's stand-ins
(tests/cluster/bin/apptainer, bin/shifter, on the jobs' PATH through site-env.sh as bin/ibrun is):
they parse the options as the real tools do, refuse what they do not emulate, check that a registry
image is a valid reference, and run the command in place, on this machine's Python. So these runs
prove the launch line around the image, not the image.

Timing: the jobs of this file need all 8 GPUs of the cluster, so they run one after another (three
submitted at a time so the next is queued when one ends); each imports torch in 8 to 10 processes,
30 to 60 s a job on a 2-core machine, about 5 minutes for the file.
Both test nodes are one machine: every job gets a free MASTER_PORT in place of the generated one.
"""

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_machines_europe import NEW as EUROPE
from test_machines_worldwide import SLURM_NEW as WORLDWIDE
from test_verify_generated import AURORA_HSN, CONCURRENT_JOBS, JOB_TIMEOUT, Case, failures
from venvs import nested_venv

from maple_ci.bench_real import load_real_cases, real_dir
from maple_ci.extract import extract
from maple_ci.files import read_text
from maple_ci.port import apply_overrides, port_intent
from maple_ci.profiles import load_profiles
from maple_ci.verify import miniapp_for
from maple_ci.verify.local import verify_local
from maple_ci.verify.slurm import verify_slurm


@dataclass(frozen=True)
class RealRun:
    file: str  # under tests/data/real/: the group (the checkout), then the case's file
    target: str
    shows: tuple[str, ...]  # what the port must contain for the case to test what it is here for
    submit_options: tuple[str, ...] = ()  # sbatch options at submit time, as a user gives them


RUNS = [
    # Megatron-LM, arguments in bash arrays, torchrun per node; TP 4 x PP 1 divides 8 ranks.
    RealRun("centers/deltaai/megatron_tp.slurm", "delta",
            ("pretrain_gpt.py", "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 1", "torchrun")),
    # Megatron in a Pyxis container (NGC image), the command built in a CMD string run by `sh -c`; the
    # image is not on Perlmutter's allowlist pinned by digest, so the site's set-up runs the program
    # and the header says so (issue 15). TP 2 x PP 2 divides 8 ranks.
    RealRun("frameworks/megatron_lm/examples/sc21/run_gpt_1.3b.sbatch", "perlmutter",
            ("not on perlmutter's list of allowed images pinned by digest",
             "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2")),
    # NeMo (Lightning) in a Pyxis container, several commands in one `bash -c` string; its data bind
    # becomes a path for the user to give.
    RealRun("frameworks/nemo/asr_finetune.sbatch", "perlmutter",
            ("its image is not on perlmutter's list", "<your path on perlmutter>", "trainer.num_nodes=2")),
    # Lightning, one srun task per GPU (its SLURMEnvironment).
    RealRun("centers/alliance/lightning-narval.sh", "perlmutter", ("Lightning's Trainer", "pl_trainer.py")),
    # Lightning CLI in an Apptainer SIF (not carried: a .sif path is no pinned image), nodes chosen at
    # submit time (`sbatch -N 2`).
    RealRun("frameworks/lightning/cli/apptainer_cli.sbatch", "delta",
            ("not used here", "# Submit: sbatch -N <nodes>"), ("-N", "2")),
    # A per-rank wrapper from the repository (Polaris' GPU affinity script) under PBS mpiexec.
    RealRun("centers/polaris/ddp_affinity.pbs", "perlmutter",
            ("./set_affinity_gpu_polaris.sh only binds each rank to its device", "train_ddp.py")),
    # torchrun with a c10d rendezvous.
    RealRun("centers/delta/torchrun_c10d.slurm", "perlmutter", ("torchrun --nnodes=", "--rdzv_backend=c10d")),
    # Hugging Face Accelerate, one `accelerate launch` per node.
    RealRun("centers/perlmutter/accelerate_clm.sbatch", "delta", ("accelerate launch", "run_clm.py")),
]


def _port(run: RealRun, out: Path) -> tuple[str, str]:
    """(the ported script, the mini-app for its program), through maple-ci's own pipeline."""
    [case] = [c for c in load_real_cases() if c["path"] == real_dir() / run.file]
    name = str(case["path"].relative_to(case["group"].parent))
    intent = extract(read_text(case["path"], name), name, case["path"].parent, case["group"])
    [result] = port_intent(intent, [run.target], name, out)
    assert result.status == "ok", result
    return result.script, miniapp_for(intent.framework, intent.strategy)


def _verify(run: RealRun, script: str, miniapp: str, master_port: int, workdir: Path, cluster):
    # The nodes are one machine: a port of its own for each job's rendezvous.
    script, count = re.subn(r"(?m)^export MASTER_PORT=\d+$", f"export MASTER_PORT={master_port}", script)
    assert count == 1, "the port no longer sets MASTER_PORT once"
    # a job array's tasks are jobs of their own (their own logs); one of them is the job verified here
    script = re.sub(r"(?m)^#SBATCH --array=\S+\n", "", script)
    workdir.mkdir()
    path = workdir / f"{Path(run.file).stem}.sbatch"
    path.write_text(script)
    return verify_slurm(path, miniapp=miniapp, timeout=JOB_TIMEOUT, env=cluster.job_env, workdir=workdir,
                        submit_options=list(run.submit_options))


def _problems(run: RealRun, script: str, miniapp: str, result) -> list[str]:
    missing = [shown for shown in run.shows if shown not in script]
    if missing:
        return [f"the port no longer shows {missing}"]
    return failures(Case(run.target, miniapp, 8), result)


@pytest.mark.cluster
def test_ported_corpus_scripts_train_the_miniapp_on_8_ranks(slurm_cluster, tmp_path, monkeypatch, free_port):
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path / "maple-data"))  # not the shared cache others rebuild
    ported = [_port(run, tmp_path / "ported") for run in RUNS]
    with ThreadPoolExecutor(CONCURRENT_JOBS) as pool:
        results = list(pool.map(lambda i: _verify(RUNS[i], *ported[i], free_port(), tmp_path / str(i), slurm_cluster),
                                range(len(RUNS))))
    report = {f"{run.file} -> {run.target}": _problems(run, *ported[i], results[i]) for i, run in enumerate(RUNS)}
    assert not any(report.values()), "\n".join(f"{name}: {'; '.join(why)}" for name, why in report.items() if why)


# --- every Slurm and PBS cluster: five corpus scripts port to it, one of them runs the mini-app ---
# Five 2-node sources of different schedulers, launchers and frameworks. Every port must pass the
# static checks; one port per cluster (a different source from cluster to cluster) runs, so a new
# profile is run by being there. Slurm targets run on the local cluster where its nodes hold the
# target's (<= 4 devices, <= 128 CPUs, tests/cluster/slurm.conf.in); a bigger node's ranks would
# outnumber the GPUs Slurm gives here, so those are ported and checked, not run. PBS targets run
# in the local backend's emulation, on one node where the target's node has more than 4 devices
# (12 Aurora tiles on two nodes would be 24 torch processes on this 2-core machine).
FIVE = ["centers/anvil/gpu_srun.slurm", "centers/delta/torchrun_c10d.slurm", "centers/polaris/ddp_affinity.pbs",
        "centers/perlmutter/accelerate_clm.sbatch", "centers/marenostrum5/acc_hf_deepspeed.sh"]
LOCAL_DEVICES, LOCAL_CPUS = 4, 128
TARGETS = sorted(name for name, p in load_profiles().items() if p.scheduler in ("slurm", "pbs"))
# Clusters whose ports train in their own tests (the 8-rank runs above, the European and worldwide
# machines'): the suite's time budget trains each cluster once (a 2-node job takes about a minute here).
TRAINED_ELSEWHERE = {run.target for run in RUNS} | set(EUROPE) | set(WORLDWIDE)


# Sites whose launch is Open MPI's mpirun (ABCI 3.0, NCI Gadi, ALCF Sophia, TACC Vista: their docs'
# form): the local mpirun is MPICH's, which sets no OMPI_COMM_WORLD_* ranks and reads no Open MPI
# hostfile slots, so their ports are checked statically (test_five_corpus_scripts_port_to_every_slurm_and_pbs_cluster), not run.
OPEN_MPI_SITES = {"abci3", "gadi", "sophia", "vista"}


def _runs_here(profile) -> bool:
    if profile.name in OPEN_MPI_SITES:
        return False
    return profile.scheduler == "pbs" or (profile.devices_per_node <= LOCAL_DEVICES and profile.cpus_per_node <= LOCAL_CPUS)


def _port_to(file: str, target: str, out: Path, python_envs=None, **overrides):
    [case] = [c for c in load_real_cases() if c["path"] == real_dir() / file]
    name = str(case["path"].relative_to(case["group"].parent))
    intent = apply_overrides(extract(read_text(case["path"], name), name, case["path"].parent, case["group"]), **overrides)
    [result] = port_intent(intent, [target], name, out, python_envs=python_envs or {})
    return result, miniapp_for(intent.framework, intent.strategy)


def _run_one(target: str, script: str, miniapp: str, master_port: int, workdir: Path, cluster):
    profile = load_profiles()[target]
    script = re.sub(r"(?m)^export MASTER_PORT=\d+$", f"export MASTER_PORT={master_port}", script)
    world = int(re.search(r"^# Job: .* = (\d+) ranks", script, re.M).group(1))
    workdir.mkdir()
    path = workdir / f"{target}.{profile.script_suffix}"
    if profile.scheduler == "pbs":  # Aurora's head node name resolves only on Aurora's network
        path.write_text(script.replace(AURORA_HSN, '$(head -n 1 "$PBS_NODEFILE")'))
        nodes = 1 if profile.devices_per_node > LOCAL_DEVICES else 2
        result = verify_local(path, miniapp=miniapp, nodes_hosts=nodes, timeout=JOB_TIMEOUT, env=cluster.job_env, workdir=workdir)
        return failures(Case(target, miniapp, world, hosts=()), result)
    # A site's interconnect name for the head node (JUWELS appends "i") resolves only there.
    path.write_text(re.sub(r'(?m)^(MASTER_ADDR="?\$\(.*\| head -n 1\))[a-z.-]+("?)$', r"\1\2", script))
    result = verify_slurm(path, miniapp=miniapp, timeout=JOB_TIMEOUT, env=cluster.job_env, workdir=workdir)
    return failures(Case(target, miniapp, world), result)


@pytest.mark.parametrize("target", TARGETS)
def test_five_corpus_scripts_port_to_every_slurm_and_pbs_cluster(module_data_dir, target, tmp_path):
    for file in FIVE:
        result, _ = _port_to(file, target, tmp_path / "ported")
        assert result.status == "ok", (file, [c for c in result.checks if not c.ok])


@pytest.mark.cluster
def test_one_corpus_port_per_cluster_trains_the_miniapp(slurm_cluster, tmp_path, monkeypatch, free_port):
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path / "maple-data"))
    # Targets whose center has no PyTorch activate the user's environment: a venv over this machine's torch.
    venv = tmp_path / "venv"
    nested_venv(venv)
    profiles = load_profiles()
    runs = []
    for index, target in enumerate(t for t in TARGETS if _runs_here(profiles[t]) and t not in TRAINED_ELSEWHERE):
        big = profiles[target].scheduler == "pbs" and profiles[target].devices_per_node > LOCAL_DEVICES
        result, miniapp = _port_to(FIVE[index % len(FIVE)], target, tmp_path / "ported", {"default": str(venv)},
                                   **({"nodes": 1} if big else {}))
        runs.append((target, FIVE[index % len(FIVE)], result.script, miniapp))
    assert len(runs) >= 5
    with ThreadPoolExecutor(CONCURRENT_JOBS) as pool:
        report = list(pool.map(lambda i: _run_one(runs[i][0], runs[i][2], runs[i][3], free_port(), tmp_path / str(i),
                                                  slurm_cluster), range(len(runs))))
    bad = {f"{file} -> {target}": why for (target, file, _, _), why in zip(runs, report) if why}
    assert not bad, "\n".join(f"{name}: {'; '.join(why)}" for name, why in bad.items())
