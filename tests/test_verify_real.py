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
from test_verify_generated import CONCURRENT_JOBS, JOB_TIMEOUT, Case, failures

from maple_ci.bench_real import load_real_cases, real_dir
from maple_ci.extract import extract
from maple_ci.files import read_text
from maple_ci.port import port_intent
from maple_ci.verify import miniapp_for
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
