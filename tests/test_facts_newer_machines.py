"""Issue 25 part G: the facts the 2026-11-29 domain review (shared/research/domain-review-2026-11-29.md
§2.1-2.7) found wrong or missing on the newer machines, each re-read at its source on 2026-11-29 and
checked here in the ports that carry it. The source is named in the test and in the profile or
template the fact lives in.
"""

import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from test_profile_facts import IMAGE, PYXIS, _rendered, port, port_in_image
from torch.distributed.elastic.rendezvous import RendezvousParameters
from torch.distributed.elastic.rendezvous.utils import _matches_machine_hostname, _parse_rendezvous_config
from torch.distributed.run import get_args_parser

from maple_ci.extract import extract
from maple_ci.profiles import get_profile

pytestmark = pytest.mark.usefixtures("module_data_dir")  # template tables of this module's own, not the user's cache
REAL = Path(__file__).parent / "data" / "real"
NODES = (0, 1)


def _torchrun_rows(cluster: str) -> dict[str, str]:
    return {row: script for row, script in _rendered(cluster).items() if "torchrun --" in script or "exec torchrun" in script}


def _launch(script: str) -> str:
    """The launch line of a rendered script (its last command, over continuation lines)."""
    return script[script.rindex("\nsrun ") + 1:]


def _torchrun_argv_per_node(script: str, tmp_path: Path) -> dict[int, list[str]]:
    """Run the port's launch line under bash with stand-ins: `srun` (Slurm's launcher, which only the
    sites have) runs the step's command once per node with that node's SLURM_NODEID, and `torchrun`
    records the arguments it was given. Returns them by node index."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "srun").write_text('#!/bin/bash\nwhile [[ $1 == -* ]]; do shift; done\n'
                                  f'for id in {" ".join(map(str, NODES))}; do SLURM_NODEID=$id "$@"; done\n')
    (bin_dir / "torchrun").write_text('#!/bin/bash\nprintf "%s\\n" "$@" > "$ARGV_DIR/$SLURM_NODEID"\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "ARGV_DIR": str(tmp_path),
           "NNODES": "2", "MASTER_ADDR": "jwb0001i", "MASTER_PORT": "29500"}
    subprocess.run(["bash", "-c", _launch(script)], env=env, check=True, timeout=30)
    return {node: (tmp_path / str(node)).read_text().splitlines() for node in NODES}


@pytest.mark.parametrize("cluster", ["juwelsbooster", "jupiter"])
def test_jsc_torchrun_ports_make_node_0_the_c10d_store_host(cluster, tmp_path):
    """torchrun_jsc README (HelmholtzAI-FZJ/torchrun_jsc; pytorch/pytorch#73656 still open; read
    2026-11-29): torchrun_jsc patches `--rdzv_conf`'s is_host "so that the correct process is
    recognized as the host process". torch 2.13's _create_tcp_store otherwise hosts the store only
    where the endpoint matches gethostname() or its addresses, which JSC's "<host>i" never does."""
    assert not _matches_machine_hostname("jwb0001i")  # torch's own check: no node would host the store
    rows = _torchrun_rows(cluster)
    assert {f"{cluster}-pytorch-ddp-torchrun", f"{cluster}-pytorch-fsdp", f"{cluster}-generic-torchrun"} <= set(rows)
    for row, script in rows.items():
        hosts = {}
        for node, argv in _torchrun_argv_per_node(script, tmp_path / row).items():
            args = get_args_parser().parse_args(argv)  # torch's own parser: the line is valid torchrun
            params = RendezvousParameters(args.rdzv_backend, args.rdzv_endpoint, args.rdzv_id, 2, 2,
                                          **_parse_rendezvous_config(args.rdzv_conf))
            hosts[node] = params.get_as_bool("is_host")
            assert args.training_script == "train.py", row
        assert hosts == {0: True, 1: False}, row


def test_other_sites_leave_torchs_host_detection_alone():
    # a plain first-node endpoint matches gethostname() on that node: nothing to name
    assert all("is_host" not in script for script in _torchrun_rows("daint").values())


def _node_launch(script: str) -> str:
    return re.search(r"^(mpirun|mpiexec) [^\n]*", script, re.M).group(0)


@pytest.mark.parametrize("cluster", ["abci3", "gadi", "sophia", "vista"])
@pytest.mark.parametrize("framework, strategy", [("pytorch", "ddp"), ("accelerate", "ddp")])
def test_open_mpi_per_node_launchers_leave_the_launcher_unbound(cluster, framework, strategy):
    """Open MPI's mpirun(1) (4.1 orterun(1); 5.0 mpirun(1), man.archlinux.org/man/mpirun.1, read
    2026-11-29): "mpirun automatically binds processes"; to a core for 2 or fewer processes, a
    socket above. One launcher per node carries torchrun's or accelerate's workers, so it runs with
    --bind-to none (the review measured one core without it). Vista's Open MPI version is not in
    TACC's pages; the option is the same in 4 and 5."""
    for row, script in _rendered(cluster, framework=framework, strategy=strategy).items():
        if "torchrun" in row or "accelerate" in row:
            launch = _node_launch(script)
            assert "--map-by ppr:1:node --bind-to none" in launch, (row, launch)


def test_open_mpi_rank_per_gpu_launches_keep_open_mpis_binding():
    # eight ranks per node are bound per socket by Open MPI's default; only per-node launchers change
    for row, script in _rendered("abci3", strategy="ddp").items():
        if row == "abci3-pytorch-ddp":
            assert "--bind-to" not in _node_launch(script)


@pytest.mark.parametrize("cluster, framework, missing", [
    ("juwelsbooster", "deepspeed", "a PyTorch environment without DeepSpeed"),
    ("juwelsbooster", "accelerate", "a PyTorch environment without Accelerate"),
    ("daint", "deepspeed", "a PyTorch environment without DeepSpeed"),
    ("daint", "accelerate", "a PyTorch environment without Accelerate"),
    ("jupiter", "deepspeed", "no PyTorch environment"),
    ("frontier", "pytorch", "no PyTorch environment")])
def test_the_environment_note_and_stop_name_what_the_site_lacks_for_the_ports_framework(tmp_path, cluster, framework, missing):
    """JSC's Stages PyTorch module (JSC scripts: "ml Stages/2025 ... PyTorch") and CSCS's pytorch uenv
    (cscs-docs @80abed1 docs/software/ml/pytorch.md, read 2026-11-29: uenvs v2.9.1, v2.8.0, v2.6.0 on
    daint) provide PyTorch; only DeepSpeed and Accelerate need the user's venv on top."""
    script = port(cluster, tmp_path, framework=framework, strategy="ddp")
    assert re.search(rf"^# Note: {cluster} provides {missing}: port again with --python-env PATH", script, re.M)
    stop = re.search(r"^echo 'maple-ci: (.*)' >&2; exit 1$", script, re.M).group(1)
    assert f"provides {missing};" in stop


@pytest.mark.parametrize("cluster", ["juwelsbooster", "daint"])
def test_a_pytorch_port_to_a_site_with_a_pytorch_environment_neither_stops_nor_says_it_has_none(tmp_path, cluster):
    script = port(cluster, tmp_path)
    assert "PyTorch environment" not in script and "exit 1" not in script


def test_lumi_sets_the_miopen_user_db_path_in_a_writable_per_job_directory(tmp_path):
    """LUMI AI guide (Lumi-supercomputer/LUMI-AI-Guide @a7e3387, read 2026-11-29): MIOpen's caches in
    a per-job `mktemp -d` directory. MIOpen reads MIOPEN_USER_DB_PATH (its env.cpp declares it; the
    guide's current MIOPEN_USER_DB is read by nothing, its @010eece scripts used _PATH)."""
    setup = get_profile("lumi").frameworks["pytorch"].setup
    assert not any(re.search(r"\bMIOPEN_USER_DB=", line) for line in setup)
    shell = "\n".join([line for line in setup if "MIOPEN" in line] + ['echo "$MIOPEN_USER_DB_PATH $MIOPEN_CUSTOM_CACHE_DIR"'])
    runs = [subprocess.run(["bash", "-ec", shell], capture_output=True, text=True, check=True, timeout=30,
                           env={**os.environ, "TMPDIR": str(tmp_path)}).stdout.split() for _ in range(2)]
    for paths in runs:
        assert all(Path(p).is_dir() and os.access(p, os.W_OK) and Path(p).is_relative_to(tmp_path) for p in paths)
    assert runs[0] != runs[1]  # one directory per job
    for row, script in _rendered("lumi").items():
        assert "export MIOPEN_CUSTOM_CACHE_DIR=$MIOPEN_DIR/cache MIOPEN_USER_DB_PATH=$MIOPEN_DIR/config" in script, row


def test_lumi_torchrun_binds_its_workers_by_numa_as_the_ai_guide_does():
    """AI guide 05-multi-gpu-and-node/README.md (@a7e3387, read 2026-11-29): "When torchrun is used, we
    can rely on NUMA binding with `--numa-binding=exclusive`"; every guide torchrun script passes it."""
    rows = _torchrun_rows("lumi")
    assert rows
    for row, script in rows.items():
        words = _launch(script).replace("\\\n", " ").split()
        argv = words[words.index("torchrun") + 1:]
        args = get_args_parser().parse_args([w.strip('"') for w in argv])
        assert args.numa_binding == "exclusive" and args.training_script == "train.py", row
    assert all("--numa-binding" not in s for row, s in _rendered("lumi").items() if row not in rows)


def test_lumi_leaves_numa_binding_out_when_a_source_image_runs_torchrun():
    # a source's own image may hold a torch older than the option: only LUMI's image gets it
    text = ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n#SBATCH -t 00:30:00\n"
            f"srun singularity exec docker://{IMAGE} torchrun --nproc_per_node=8 --nnodes=2 --rdzv_backend=c10d "
            "--rdzv_endpoint=$MASTER_ADDR:29500 train.py\n")
    script = port_in_image("lumi", text, source_cluster="frontier")
    assert IMAGE in script and "torchrun --" in script and "--numa-binding" not in script


def test_daint_edf_names_the_ofi_nccl_plugin_variant_cscs_recommends():
    """cscs-docs @80abed1 container-engine/resource-hook.md (read 2026-11-29): "the
    com.hooks.aws_ofi_nccl.variant annotation is used to specify a plugin variant suitable for a given
    container image"; cuda-dl "is the generally recommended choice"."""
    script = port_in_image("daint", PYXIS, source_cluster="isambard-ai")
    edf = script[script.index('cat > "$PWD/maple-environment.toml" <<EOF\n'):].split("\n", 1)[1].split("\nEOF\n")[0]
    hook = tomllib.loads(edf.replace("$PWD", "/scratch/job"))["annotations"]["com"]["hooks"]["aws_ofi_nccl"]
    assert hook == {"enabled": "true", "variant": "cuda-dl"}


@pytest.mark.parametrize("cluster, queue", [("polaris", "capacity"), ("aurora", "capacity")])
def test_a_size_left_to_submit_time_keeps_the_sources_walltime_in_a_queue_that_allows_it(tmp_path, cluster, queue):
    """ALCF running-jobs pages (user-guides @7d04a3f, read 2026-11-29): capacity takes 1-4 (Polaris)
    or 1-16 (Aurora) nodes for up to 168 h. A 2 h job with no node count goes there at 2 h, as it
    does with --nodes 1, not at the queue's 168 h limit."""
    source = REAL / "centers" / "perlmutter" / "shifter_srun_ddp.sbatch"
    intent = extract(source.read_text(), source.name)
    assert intent.nodes is None and intent.walltime == "02:00:00"
    script = port(cluster, tmp_path, text=source.read_text().replace("{", "{{").replace("}", "}}"))
    assert re.search(r"^#PBS -l walltime=02:00:00$", script, re.M)
    assert re.search(rf"^#PBS -q {queue}$", script, re.M) and "168:00:00" not in script


def test_aurora_threads_per_rank_are_the_cores_its_cpu_bind_list_gives_each_rank(tmp_path):
    """ALCF Aurora pytorch.md (user-guides @7d04a3f, read 2026-11-29): the --cpu-bind list gives "12
    processes per node ... with each rank having 4 cores available"; running-jobs-aurora.md sets
    OMP_NUM_THREADS to the cores per rank."""
    text = Path(__file__).parents[1].joinpath("examples", "perlmutter_torchrun_ddp.sbatch").read_text()
    assert "OMP_NUM_THREADS=16" in text
    script = port("aurora", tmp_path, text=text.replace("{", "{{").replace("}", "}}"))
    cores = [len(range(int(a), int(b) + 1)) for a, b in re.findall(r"(\d+)-(\d+)", re.search(r"--cpu-bind=list:(\S+)", script).group(1))]
    assert len(cores) == 12 and set(cores) == {4}
    assert re.search(r"^export OMP_NUM_THREADS=4$", script, re.M)


def test_delta_jobs_on_every_gpu_of_a_node_take_the_node_with_its_memory(tmp_path):
    """Delta_doc @826840d running_jobs.rst (read 2026-11-29): node-sharing is the default, "Default
    Memory per core 1000 MB"; "Node-exclusive mode can be obtained by ... --exclusive --mem=0". A
    64-core task got 64 of the node's 256 GB."""
    for row, script in _rendered("delta").items():
        exclusive = {"#SBATCH --exclusive", "#SBATCH --mem=0"} <= set(script.splitlines())
        assert exclusive == (not row.endswith("-single")), row
