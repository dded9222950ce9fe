"""Cluster profiles (templates/clusters/*.yaml): they load, their facts hold, and their signatures
recognise each cluster's own scripts without claiming another cluster's."""

import marshal
import re
import string
import subprocess
from pathlib import Path

import pytest
import yaml

from maple_ci.errors import MapleError
from maple_ci.intent import JobIntent
from maple_ci.library import TemplateMeta, load_templates
from maple_ci.paths import templates_dir
from maple_ci.profiles import ClusterProfile, Queue, get_profile, load_profiles, pick_queue
from maple_ci.synthesize import render

PROFILE_FILES = sorted((templates_dir() / "clusters").glob("*.yaml"))
CLUSTERS = sorted(path.stem for path in PROFILE_FILES)
ALCF_SITES = sorted(name for name, profile in load_profiles().items() if profile.center == "ALCF")

# One characteristic job-script excerpt per cluster, written in the form of the launch sketches in
# shared/reference/clusters.md (each taken from the center's own example).
TYPICAL_SCRIPTS = {
    "perlmutter": """#!/bin/bash
#SBATCH -A m1234 -C gpu -q regular -N 2 -t 01:00:00
#SBATCH --ntasks-per-node=4 --gpus-per-node=4 --cpus-per-task=32
module load pytorch/2.8.0
export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1) MASTER_PORT=29500
srun bash -c 'RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID WORLD_SIZE=$SLURM_NTASKS python train.py'
""",
    "polaris": """#!/bin/bash
#PBS -A MyProject -q debug-scaling -l select=2:system=polaris -l place=scatter
#PBS -l walltime=01:00:00 -l filesystems=home:eagle
module use /soft/modulefiles; module load conda; conda activate
NNODES=$(wc -l < $PBS_NODEFILE)
mpiexec -n $((NNODES*4)) --ppn 4 --depth 16 --cpu-bind depth python3 train.py
""",
    "aurora": """#!/bin/bash
#PBS -A MyProject -q debug-scaling -l select=2 -l place=scatter -l walltime=00:30:00
#PBS -l filesystems=home:flare -k doe
module load frameworks
export CCL_PROCESS_LAUNCHER=pmix CCL_ATL_TRANSPORT=mpi CCL_KVS_MODE=mpi FI_MR_CACHE_MONITOR=userfaultfd
NNODES=$(wc -l < $PBS_NODEFILE)
mpiexec -n $((NNODES*12)) --ppn 12 --cpu-bind=list:4-7:8-11:12-15:16-19:20-23:24-27:56-59:60-63:64-67:68-71:72-75:76-79 python train.py
""",
    "sophia": """#!/bin/bash
#PBS -l select=1 -l walltime=01:00:00 -q by-gpu -A MyProject -l filesystems=home:eagle
source /etc/profile
module use /soft/modulefiles; module load conda; conda activate base
python train.py
""",
    "frontier": """#!/bin/bash
#SBATCH -A ABC123 -p batch -N 2 -t 00:30:00
#SBATCH --network=disable_rdzv_get
module load PrgEnv-gnu/8.7.0 cpe/26.03 miniforge3/23.11.0-0 rocm/7.1.1 rccl-net-plugin craype-accel-amd-gfx90a
export LD_LIBRARY_PATH=$CRAY_LD_LIBRARY_PATH:$LD_LIBRARY_PATH
conda activate /path/to/env
export MASTER_ADDR=$(hostname -i) MASTER_PORT=3442
srun -N2 -n16 -c7 --gpus-per-task=1 --gpu-bind=closest python3 -u train.py
""",
    "lonestar6": """#!/bin/bash
#SBATCH -p gpu-a100 -N 2 -n 2 -t 01:00:00 -A ABC23001
module load python3/3.9.7
source $SCRATCH/python-envs/test/bin/activate
ibrun -np 2 ./run.sh $(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1) 2
""",
    "stampede3": """#!/bin/bash
#SBATCH -p pvc -N 2 -n 2 -t 01:00:00
module load python
conda activate pytorch
ibrun -np 2 ./run.sh $(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1) 2
""",
    "vista": """#!/bin/bash
#SBATCH -p gh -N 2 -n 2 -t 01:00:00
module load gcc cuda python3
source $SCRATCH/python-envs/test/bin/activate
mpirun -np 2 --map-by ppr:1:node run.sh $(scontrol show hostnames | head -n1) 2
""",
    "delta": """#!/bin/bash
#SBATCH --account=bbka-delta-gpu --partition=gpuA100x4 --nodes=2
#SBATCH --ntasks-per-node=1 --gpus-per-node=4 --cpus-per-task=16 --time=01:00:00
module load pytorch-conda/2.8
export NCCL_SOCKET_IFNAME=hsn
head=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)
head_ip=$(srun -N1 -n1 -w $head hostname --ip-address)
srun torchrun --nnodes $SLURM_NNODES --nproc_per_node 4 --rdzv_id $RANDOM --rdzv_backend c10d --rdzv_endpoint=$head_ip:29500 train.py
""",
    "deltaai": """#!/bin/bash
#SBATCH --account=abcd-dtai-gh --partition=ghx4 --nodes=2
#SBATCH --ntasks-per-node=1 --gpus-per-node=4 --time=01:00:00
module load python/miniforge3_pytorch/2.7.0
srun torchrun --nnodes 2 --nproc_per_node 4 --rdzv_backend c10d --rdzv_endpoint=$head:29500 train.py
""",
    "anvil": """#!/bin/bash
#SBATCH -A mcb130189-gpu -p gpu -N 2 --gpus-per-node=4 -t 01:00:00
module load modtree/gpu
module load conda
conda activate myenv
srun torchrun --nnodes 2 --nproc_per_node 4 train.py
""",
    "bridges2": """#!/bin/bash
#SBATCH -p GPU -N 2 --gpus=v100-32:16 -t 01:00:00 -A abc123456p
module load anaconda3 cuda
cd /ocean/projects/abc123456p/me/run
srun torchrun --nnodes 2 --nproc_per_node 8 train.py
""",
}


@pytest.fixture(scope="module")
def profiles() -> dict[str, ClusterProfile]:
    return load_profiles()


def test_every_profile_file_loads_and_validates(profiles):
    assert sorted(profiles) == CLUSTERS and len(CLUSTERS) >= 12


@pytest.mark.parametrize("path", PROFILE_FILES, ids=lambda p: p.stem)
def test_file_name_is_the_profile_name(path: Path):
    data = yaml.safe_load(path.read_text())
    ClusterProfile.model_validate(data)
    assert data["name"] == path.stem


@pytest.mark.parametrize("name", CLUSTERS)
def test_exactly_one_default_queue_and_unique_names(profiles, name):
    queues = profiles[name].queues
    assert sum(q.default for q in queues) == 1
    assert len({q.name for q in queues}) == len(queues)
    for queue in queues:
        assert queue.min_nodes <= queue.max_nodes


@pytest.mark.parametrize("name", CLUSTERS)
def test_docs_and_sources_are_https(profiles, name):
    profile = profiles[name]
    for url in [profile.docs_url, *profile.sources]:
        assert url.startswith("https://"), url


@pytest.mark.parametrize(
    "name, devices, gpus",
    [("aurora", 12, 6), ("frontier", 8, 4), ("vista", 1, 1), ("lonestar6", 3, 3), ("bridges2", 8, 8),
     ("sophia", 8, 8), ("polaris", 4, 4), ("perlmutter", 4, 4), ("delta", 4, 4), ("deltaai", 4, 4),
     ("anvil", 4, 4), ("stampede3", 4, 4)],
)
def test_devices_per_node(profiles, name, devices, gpus):
    assert profiles[name].devices_per_node == devices
    assert profiles[name].gpus_per_node == gpus


def test_device_and_backend_follow_the_gpu_vendor(profiles):
    for profile in profiles.values():
        if profile.gpu_vendor == "intel":
            assert (profile.device, profile.backend) == ("xpu", "xccl"), profile.name
        else:  # ROCm builds of torch also use device "cuda" and the name "nccl" (RCCL)
            assert (profile.device, profile.backend) == ("cuda", "nccl"), profile.name
    assert {"vista", "deltaai"} <= {p.name for p in profiles.values() if p.cpu_arch == "aarch64"}
    for profile in profiles.values():  # Grace Hopper: the CPU is Arm
        assert "GH200" not in profile.gpu_model or profile.cpu_arch == "aarch64", profile.name


# Apptainer/Singularity's GPU flag per vendor; Intel GPUs need none (the devices are bound by default).
GPU_FLAG = {"nvidia": ["--nv"], "amd": ["--rocm"], "intel": []}


def test_container_runtimes_give_the_gpus_of_their_vendor_and_name_sources(profiles):
    for profile in profiles.values():
        container = profile.container
        assert container.sources and all(url.startswith("https://") for url in container.sources), profile.name
        if container.runtime in ("apptainer", "singularity"):
            assert container.command == [container.runtime, "exec"], profile.name
            assert container.gpu_flags == GPU_FLAG[profile.gpu_vendor], profile.name
    perlmutter = profiles["perlmutter"].container
    assert (perlmutter.runtime, perlmutter.gpu_flags) == ("shifter", ["--module=gpu,nccl-plugin"])


@pytest.mark.parametrize("name", ALCF_SITES)
def test_alcf_sites_name_their_filesystems_and_use_pbs_queues(profiles, name):
    profile = profiles[name]
    assert profile.scheduler == "pbs" and profile.queue_directive == "queue"
    assert any(re.fullmatch(r"-l filesystems=\S+", d) for d in profile.directives)
    assert profile.gpu_request is None  # PBS select chunks are whole nodes with their GPUs
    assert profile.account_required


def test_pbs_filesystems_and_select_suffix(profiles):
    assert "-l filesystems=home:eagle" in profiles["polaris"].directives
    assert "-l filesystems=home:flare" in profiles["aurora"].directives
    assert profiles["polaris"].select_extra == ":system=polaris"
    assert profiles["aurora"].select_extra == ""
    for profile in profiles.values():
        if profile.scheduler == "slurm":
            assert profile.select_extra == "", profile.name


def test_directives_are_written_without_their_prefix(profiles):
    for profile in profiles.values():
        for directive in profile.directives:
            assert not directive.startswith("#"), (profile.name, directive)
            assert directive.startswith("-"), (profile.name, directive)


def test_gpu_request_placeholders(profiles):
    allowed = {"gpus", "total_gpus"}
    for profile in profiles.values():
        if profile.gpu_request is None:
            continue
        fields = {f for _, f, _, _ in string.Formatter().parse(profile.gpu_request) if f}
        assert fields and fields <= allowed, (profile.name, profile.gpu_request)
    assert profiles["perlmutter"].gpu_request.format(gpus=4) == "--gpus-per-node=4"
    assert profiles["bridges2"].gpu_request.format(gpus=8, total_gpus=16) == "--gpus=v100-32:16"
    for name in ("frontier", "lonestar6", "stampede3", "vista"):  # GPUs come with the node
        assert profiles[name].gpu_request is None


def test_tacc_rejected_directives(profiles):
    assert {"--gres", "--gpus-per-task", "--mem"} <= set(profiles["vista"].rejected_directives)
    assert {"--gres", "--gpus-per-task", "--mem"} <= set(profiles["stampede3"].rejected_directives)
    for profile in profiles.values():
        for option in profile.rejected_directives:
            assert re.fullmatch(r"--[a-z][a-z-]*", option), (profile.name, option)


def test_site_specific_directives(profiles):
    assert "--network=disable_rdzv_get" in profiles["frontier"].directives
    assert "--constraint=gpu" in profiles["perlmutter"].directives
    assert "-k doe" in profiles["aurora"].directives


def test_every_profile_sets_up_pytorch_and_env_values_are_literal(profiles):
    for profile in profiles.values():
        assert "pytorch" in profile.frameworks, profile.name
        assert profile.setup_for("no-such-framework") is profile.frameworks["pytorch"]
        for key, value in profile.env.items():
            assert re.fullmatch(r"[A-Z_][A-Z0-9_]*", key), (profile.name, key)
            assert "$" not in value, (profile.name, key)  # expansion belongs in setup lines


def test_site_environments(profiles):
    assert profiles["polaris"].frameworks["pytorch"].module_use == ["/soft/modulefiles"]
    assert profiles["polaris"].frameworks["pytorch"].modules == ["conda"]
    assert profiles["aurora"].frameworks["pytorch"].modules == ["frameworks"]
    assert profiles["aurora"].env["CCL_PROCESS_LAUNCHER"] == "pmix"
    assert "rccl-net-plugin" in profiles["frontier"].frameworks["pytorch"].modules
    assert profiles["anvil"].frameworks["pytorch"].modules[0] == "modtree/gpu"
    for name in ("perlmutter", "delta"):  # Slingshot systems
        assert profiles[name].env["NCCL_SOCKET_IFNAME"] == "hsn"


def test_account_shapes(profiles):
    assert profiles["delta"].account_example.endswith("-delta-gpu")
    assert profiles["deltaai"].account_example.endswith("-dtai-gh")
    assert profiles["anvil"].account_example.endswith("-gpu")
    for name in ("lonestar6", "stampede3", "vista"):  # TACC: -A only with several projects
        assert not profiles[name].account_required


# --- pick_queue -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "name, expected",
    [("perlmutter", "regular"), ("polaris", "debug-scaling"), ("aurora", "debug-scaling"),
     ("sophia", "by-node"), ("frontier", "batch"), ("lonestar6", "gpu-a100"), ("stampede3", "h100"),
     ("vista", "gh"), ("delta", "gpuA100x4"), ("deltaai", "ghx4"), ("anvil", "gpu"), ("bridges2", "GPU")],
)
def test_two_node_one_hour_job_gets_the_default_queue(profiles, name, expected):
    queue = pick_queue(profiles[name], 2, "01:00:00")
    assert queue.name == expected
    assert queue.default


def test_small_jobs_never_land_in_alcf_prod(profiles):
    # prod takes >= 10 nodes on Polaris and >= 256 on Aurora; smaller jobs there are rejected.
    for name in ("polaris", "aurora"):
        for hours in ("01:00:00", "06:00:00", "20:00:00"):
            assert pick_queue(profiles[name], 2, hours).name != "prod"
    # ALCF: preemptable jobs "can be killed at any time"; capacity (1-4 nodes, 168 h) is not.
    assert pick_queue(profiles["polaris"], 2, "06:00:00").name == "capacity"
    assert pick_queue(profiles["polaris"], 6, "06:00:00").name == "preemptable"  # nothing else takes 5-10 nodes
    assert pick_queue(profiles["aurora"], 2, "06:00:00").name == "capacity"
    assert pick_queue(profiles["aurora"], 1, "00:30:00").name == "debug"  # debug-scaling starts at 2


def test_walltime_bins_route_by_job_size(profiles):
    frontier = profiles["frontier"]
    batch = next(q for q in frontier.queues if q.name == "batch")
    assert batch.max_walltime_for(2) == "02:00:00"
    assert batch.max_walltime_for(100) == "06:00:00"
    assert batch.max_walltime_for(1000) == "12:00:00"
    # 2 nodes for 6 h exceeds batch's 2 h bin; extended (<= 64 nodes, 24 h) takes it
    assert pick_queue(frontier, 2, "06:00:00").name == "extended"
    assert pick_queue(frontier, 100, "06:00:00").name == "batch"
    polaris_prod = next(q for q in profiles["polaris"].queues if q.name == "prod")
    assert polaris_prod.max_walltime_for(10) == "03:00:00"
    assert pick_queue(profiles["polaris"], 200, "12:00:00").name == "prod"
    assert pick_queue(profiles["polaris"], 20, "03:00:00").name == "prod"


def test_queue_without_bins_uses_its_max_walltime():
    assert Queue(name="q", max_walltime="48:00:00", max_nodes=8).max_walltime_for(8) == "48:00:00"


def test_too_large_job_falls_back_to_the_default(profiles):
    for profile in profiles.values():
        assert pick_queue(profile, 100_000, "01:00:00") is profile.default_queue()
        assert pick_queue(profile, 1, "9999:00:00") is profile.default_queue()


def test_requested_queue_wins_when_the_cluster_has_it(profiles):
    assert pick_queue(profiles["perlmutter"], 2, "01:00:00", requested="debug").name == "debug"
    assert pick_queue(profiles["perlmutter"], 2, "01:00:00", requested="gpuA100x4").name == "regular"


# --- get_profile ------------------------------------------------------------------------------

def test_get_profile_is_case_insensitive():
    assert get_profile(" Polaris ").name == "polaris"


def test_unknown_cluster_names_the_known_ones():
    with pytest.raises(MapleError) as excinfo:
        get_profile("summit")
    message = str(excinfo.value)
    assert "summit" in message
    for name in CLUSTERS:
        assert name in message
    assert excinfo.value.exit_code == 2


# --- signatures -------------------------------------------------------------------------------
# maple_ci.extract matches signatures case-insensitively; the tests do the same.

def _hits(profile: ClusterProfile, text: str) -> list[str]:
    return [p for p in profile.signatures if re.search(p, text, re.I)]


def test_signatures_compile(profiles):
    for profile in profiles.values():
        assert profile.signatures, profile.name
        for pattern in profile.signatures:
            re.compile(pattern, re.I)


@pytest.mark.parametrize("name", sorted(TYPICAL_SCRIPTS))
def test_signatures_recognise_their_own_cluster(profiles, name):
    script = TYPICAL_SCRIPTS[name]
    assert _hits(profiles[name], script), name


@pytest.mark.parametrize("name", CLUSTERS)
def test_signatures_do_not_claim_other_clusters_scripts(profiles, name):
    for other, script in TYPICAL_SCRIPTS.items():
        if other == name:
            continue
        hits = _hits(profiles[name], script)
        assert not hits, f"{name} signatures {hits} match the {other} script"


@pytest.mark.parametrize(
    "name, line",
    [("perlmutter", '#SBATCH -C "gpu&hbm80g"'), ("polaris", "#PBS -l select=4:system=polaris"),
     ("aurora", "#PBS -l filesystems=home:flare:daos_user_fs"), ("sophia", "#PBS -q by-node"),
     ("stampede3", "#!/bin/bash\n#SBATCH -p h100\ncd $WORK"), ("vista", "#SBATCH --partition=gh-dev"),
     ("delta", "#SBATCH --partition=gpuA40x4-interactive"), ("deltaai", "#SBATCH -p ghx4-interactive"),
     ("bridges2", "#SBATCH -p GPU-shared"), ("lonestar6", "#SBATCH -p gpu-a100-dev"),
     ("frontier", "cd /lustre/orion/abc123/scratch"), ("anvil", "cd /anvil/projects/x-abc123/"),
     ("polaris", "Running on x3005c0s7b0n0"), ("frontier", "srun: frontier08123 task 0")],
)
def test_signatures_recognise_variants(profiles, name, line):
    assert _hits(profiles[name], line)
    others = [o for o in CLUSTERS if o != name]
    assert not [o for o in others if _hits(profiles[o], line)]


def test_prologue_runs_before_modules_only_where_needed(profiles):
    # Sophia's bash jobs need /etc/profile for `module`; elsewhere the prologue stays empty.
    assert any("/etc/profile" in line for line in profiles["sophia"].prologue)
    assert not profiles["polaris"].prologue and not profiles["perlmutter"].prologue


def test_setup_lines_are_valid_bash(profiles):
    # Generated scripts run prologue and setup lines verbatim; a quoting slip would break every job.
    for profile in profiles.values():
        for framework, setup in profile.frameworks.items():
            script = "\n".join([*profile.prologue, *setup.setup]) + "\n"
            result = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
            assert result.returncode == 0, (profile.name, framework, result.stderr)


def test_shared_module_tree_does_not_outvote_delta(profiles):
    # Delta also uses modtree/gpu, an Anvil signature; extract picks the profile with most hits.
    script = TYPICAL_SCRIPTS["delta"] + "module load modtree/gpu\n"
    scores = {name: len(_hits(p, script)) for name, p in profiles.items()}
    best = max(scores, key=scores.get)
    assert best == "delta" and scores["delta"] > scores["anvil"]


# --- template rows (library.py): a cluster is its profile plus at most one template file ----------

# What every cluster lists (a combination it cannot run as `supported: false` with its reason): the
# families the port tests check on every profile, and Accelerate's FSDP and ZeRO-3, which retrieval
# keeps as they are (test_retrieve.py).
FAMILIES = [("pytorch", "ddp"), ("pytorch", "fsdp"), ("deepspeed", "zero3"), ("accelerate", "ddp"),
            ("accelerate", "fsdp"), ("accelerate", "zero3"), ("pytorch", "single"), ("pytorch", "any")]


@pytest.mark.parametrize("name", CLUSTERS)
def test_every_cluster_lists_its_template_rows_in_its_profile(profiles, name):
    profile = profiles[name]
    rows = {(t.framework, t.strategy) for t in profile.templates}
    assert set(FAMILIES) <= rows, f"{name} lacks {set(FAMILIES) - rows}"
    assert all(t.id.startswith(f"{name}-") for t in profile.templates)
    launch = templates_dir() / "launch"
    assert not (launch / name).exists(), "the rows replace the per-variant files"
    assert (launch / (profile.launch_template or f"_{profile.scheduler}.sh.j2")).is_file()


@pytest.mark.parametrize("name", CLUSTERS)
def test_every_row_renders_its_shape(profiles, name):
    intent = JobIntent(nodes=2, entrypoint="train.py", script_args=["--epochs", "1"])
    for template in (t for t in load_templates() if t.cluster == name and t.supported):
        script = render(intent, profiles[name], template, "job.sh")
        launch = script[script.index("export MASTER_PORT="):]
        assert "train.py --epochs 1" in launch, (template.id, launch)
        assert SHAPE_LINE[template.shape].search(launch), (template.id, template.shape, launch)


# What each shape's launch lines must contain, whatever the cluster's launcher.
SHAPE_LINE = {
    "ranks": re.compile(r"export RANK=\S+ LOCAL_RANK=\S+ WORLD_SIZE=[^;]+; exec"),
    "generic": re.compile(r"LOCAL_WORLD_SIZE=\d+ GROUP_RANK="),
    # JSC names the c10d host inside the task: torchrun --rdzv_conf=is_host=... "$@"' maple-node --nnodes=
    "torchrun": re.compile(r"torchrun (?:--rdzv_conf=is_host=[^\n]*' maple-node )?--nnodes=\"\$NNODES\""),
    "accelerate": re.compile(r"accelerate launch --machine_rank="),
    "deepspeed": re.compile(r"deepspeed --hostfile=maple-hostfile"),
    "single": re.compile(r"^(?![^\n]*NNODES)[^\n]*\bpython train\.py", re.M),  # one process, not one per node
}


def test_a_rows_shape_follows_from_its_launcher_and_strategy():
    row = dict(id="x-y", cluster="x", scheduler="slurm", framework="pytorch", description="", path="_slurm.sh.j2")
    shape = lambda strategy, launcher: TemplateMeta(**row, strategy=strategy, launcher=launcher).shape  # noqa: E731
    assert [shape("ddp", "srun"), shape("fsdp", "torchrun"), shape("zero3", "deepspeed"), shape("ddp", "accelerate"),
            shape("any", "mpiexec"), shape("any", "torchrun"), shape("single", "python")] == \
        ["ranks", "torchrun", "deepspeed", "accelerate", "generic", "torchrun", "single"]


def test_data_files_are_parsed_once_and_keyed_by_content(tmp_path, monkeypatch):
    """data_cache: the parsed form is read back on the next load, and an edited file (a new key)
    is parsed again, never served stale; a value marshal cannot hold (a YAML date) is not cached."""
    from maple_ci.data_cache import load_yaml

    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path / "data"))
    source = tmp_path / "profile.yaml"
    source.write_text("name: one\ngpus_per_node: 4\n")
    assert load_yaml(source) == {"name": "one", "gpus_per_node": 4}
    entries = list((tmp_path / "data" / "parsed").iterdir())
    assert len(entries) == 1
    source.write_text("name: two\ngpus_per_node: 8\n")
    assert load_yaml(source) == {"name": "two", "gpus_per_node": 8}
    assert len(list((tmp_path / "data" / "parsed").iterdir())) == 2
    source.write_text("name: one\ngpus_per_node: 4\n")
    entries[0].write_bytes(marshal.dumps({"name": "from the cache"}))
    assert load_yaml(source) == {"name": "from the cache"}  # same content: the cached form, no parse
    dated = tmp_path / "dated.yaml"
    dated.write_text("read: 2026-11-29\n")
    assert str(load_yaml(dated)["read"]) == "2026-11-29"
    assert len(list((tmp_path / "data" / "parsed").iterdir())) == 2


def test_a_broken_cache_entry_is_parsed_again(tmp_path, monkeypatch):
    from maple_ci.data_cache import load_yaml

    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path / "data"))
    source = tmp_path / "profile.yaml"
    source.write_text("name: one\n")
    load_yaml(source)
    (entry,) = (tmp_path / "data" / "parsed").iterdir()
    entry.write_bytes(b"\x00garbage")
    assert load_yaml(source) == {"name": "one"}
