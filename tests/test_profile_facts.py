"""Issue 16, item 5: the profile facts the domain review (shared/research/domain-review-2026-11-25.md)
found wrong, outdated or missing, each checked in the ports that carry it. Every fact names its
center page in templates/clusters/<name>.yaml, read 2026-11-25; the test says which one.
"""

import re
import tomllib
from pathlib import Path

import pytest

from maple_ci.extract import extract
from maple_ci.intent import JobIntent
from maple_ci.library import load_templates
from maple_ci.port import port_intent
from maple_ci.profiles import ClusterProfile, get_profile, load_profiles, pick_queue
from maple_ci.retrieve import best_template
from maple_ci.synthesize import render
from maple_ci.verify.static import static_checks

# A two-node DDP job in a style the corpus lacks: srun one task per GPU, no cluster markers.
DDP = ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n#SBATCH -t {walltime}\n"
       "#SBATCH -A acct\nexport MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)\n"
       "srun python train.py --epochs 3\n")
IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3@sha256:" + "0" * 64
CONTAINER = ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n#SBATCH -t 00:30:00\n"
             f"#SBATCH -A acct\nsrun apptainer exec --nv docker://{IMAGE} python train.py\n")


def port(cluster: str, tmp_path: Path, text: str = DDP, walltime: str = "00:30:00", **intent_updates):
    intent = extract(text.format(walltime=walltime), "job.sh")
    for key, value in intent_updates.items():
        intent = intent.__class__(**{**intent.__dict__, key: value})
    [result] = port_intent(intent, [cluster], "job.sh", tmp_path)
    assert result.status in ("ok", "failed"), result
    return result.script


def port_in_image(cluster: str, text: str = CONTAINER, **intent_updates) -> str:
    """The port of a container job to `cluster`, with its (digest-pinned) image among the ones the
    site allows, so the port runs the program in it."""
    intent = extract(text, "job.sh")
    intent = intent.__class__(**{**intent.__dict__, **intent_updates})
    profile = get_profile(cluster)
    allowed = profile.container.model_copy(update={"allowed_images": [IMAGE]})
    profile = profile.model_copy(update={"container": allowed})
    return render(intent, profile, best_template(intent, cluster), "job.sh")


def before_launch(script: str) -> str:
    return script[: script.index("export MASTER_PORT=")]


@pytest.mark.parametrize("framework, strategy", [("pytorch", "ddp"), ("deepspeed", "zero3"), ("accelerate", "ddp")])
def test_polaris_nccl_jobs_put_alcfs_ofi_plugin_and_hwloc_on_the_library_path(tmp_path, framework, strategy):
    # polaris/.../libraries/nccl.md: the default conda module no longer sets them; NCCL_NET without
    # the plugin stops NCCL at init.
    script = before_launch(port("polaris", tmp_path, framework=framework, strategy=strategy))
    assert "export NCCL_NET='AWS Libfabric'" in script
    assert "export LD_LIBRARY_PATH=/soft/libraries/aws-ofi-nccl/v1.9.1-aws/lib:$LD_LIBRARY_PATH" in script
    assert "export LD_LIBRARY_PATH=/soft/libraries/hwloc/lib/:$LD_LIBRARY_PATH" in script


def test_a_polaris_container_job_gets_no_nccl_net_and_alcfs_current_apptainer_modules():
    script = port_in_image("polaris")
    assert "apptainer exec" in script
    assert not re.search(r"NCCL_NET=", script)  # the OFI plugin is on the host, not in the image
    assert "module use /soft/modulefiles\nmodule load spack-pe-base" in script and "module load apptainer" in script
    assert "0.6.1" not in script


def test_a_sophia_container_job_uses_the_spack_module_path_of_sophias_container_page():
    script = port_in_image("sophia")
    assert "module use /soft/spack/base/0.7.1/install/modulefiles/Core/\nmodule load apptainer" in script


def test_stampede3_loads_tacc_python_module(tmp_path):
    # 3stampede/python.md: "Load python like so: module load python"; an unknown module aborts under set -e.
    assert re.search(r"^module load python$", port("stampede3", tmp_path), re.M)


def test_polaris_puts_long_small_jobs_in_capacity_and_says_when_a_job_is_preemptable(tmp_path):
    polaris = load_profiles()["polaris"]
    assert pick_queue(polaris, 2, "02:00:00").name == "capacity"
    assert "preemptable" not in port("polaris", tmp_path, walltime="02:00:00").split("#PBS")[0]
    six = DDP.replace("-N 2", "-N 6")
    script = port("polaris", tmp_path, six, walltime="02:00:00")
    assert "#PBS -q preemptable" in script
    assert re.search(r"^# Note: queue preemptable is preemptable: jobs here can be killed", script, re.M)


def test_perlmutter_gives_each_of_four_ranks_32_of_the_128_cpus_slurm_counts(tmp_path):
    # docs.nersc.gov/machinelearning/launchers: 4 tasks x --cpus-per-task=32.
    script = port("perlmutter", tmp_path)
    assert "#SBATCH --cpus-per-task=32" in script and "--ntasks-per-node=4 --cpus-per-task=32" in script


def test_a_perlmutter_to_perlmutter_port_keeps_32_cpus_per_rank(tmp_path):
    text = DDP.replace("#SBATCH -A acct", "#SBATCH -A m1_g\n#SBATCH -C gpu\n#SBATCH -c 32")
    script = port("perlmutter", tmp_path, text)
    assert "--cpus-per-task=32" in script and "--cpus-per-task=16" not in script


def test_delta_loads_ncsas_nccl_with_the_slingshot_plugin(tmp_path):
    # running_jobs.rst "PyTorch Multi-Node": module load nccl; missing, it only slows the job (reported).
    assert re.search(r"^module load nccl \|\| echo .*TCP sockets", before_launch(port("delta", tmp_path)), re.M)


def test_frontier_container_jobs_load_olcfs_container_tools():
    script = port_in_image("frontier", CONTAINER.replace("--nv", "--rocm"), source_cluster="frontier")
    assert "module load olcf-container-tools\nmodule load apptainer-enable-mpi\nmodule load apptainer-enable-gpu" in script


@pytest.mark.parametrize("cluster", ["polaris", "delta"])
def test_a100_nodes_numbered_against_numa_order_give_rank_i_the_gpu_next_to_its_cores(tmp_path, cluster):
    # polaris/index.md and Delta architecture.rst: GPU0 sits on the last cores, GPU3 on the first.
    assert "export CUDA_VISIBLE_DEVICES=3,2,1,0" in port(cluster, tmp_path)
    one_gpu = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus=1\n#SBATCH -t 00:30:00\npython train.py\n"
    assert "3,2,1,0" not in port(cluster, tmp_path, one_gpu)  # one device: no order to fix


def test_perlmutter_keeps_its_own_gpu_order():
    assert load_profiles()["perlmutter"].device_order is None  # NERSC documents no reversal


# --- item 6: a port to the source's own cluster keeps the center's own tuning ---

SAME = ("#!/bin/bash\n#SBATCH -A m1234_g\n#SBATCH -C 'gpu&hbm80g'\n#SBATCH -q regular\n#SBATCH -N 2\n"
        "#SBATCH --ntasks-per-node=4\n#SBATCH -c 32\n#SBATCH --gpus-per-node=4\n#SBATCH -t 02:00:00\n"
        "export CUDA_VISIBLE_DEVICES=3,2,1,0\nsrun python train.py\n")


def test_a_perlmutter_script_ported_to_perlmutter_keeps_its_80gb_constraint_and_cpus(tmp_path):
    script = port("perlmutter", tmp_path, SAME)
    assert "#SBATCH --constraint=gpu&hbm80g" in script
    assert "#SBATCH --constraint=gpu\n" not in script  # one constraint: the source's
    assert "--ntasks-per-node=4 --cpus-per-task=32" in script
    assert "export CUDA_VISIBLE_DEVICES=3,2,1,0" in script  # the source's device order, on its own cluster


def test_another_clusters_constraint_is_not_carried(tmp_path):
    assert "hbm80g" not in port("delta", tmp_path, SAME)


def test_a_constraint_that_is_not_a_feature_expression_is_not_kept(tmp_path):
    script = port("perlmutter", tmp_path, SAME.replace("'gpu&hbm80g'", "'gpu;x'"))
    assert "#SBATCH --constraint=gpu\n" in script and not re.search(r"^#SBATCH.*gpu;x", script, re.M)
    assert "constraint 'gpu;x' is not a plain feature expression; not kept" in script


def test_lower_impact_facts_match_the_centers_tables():
    profiles = load_profiles()
    batch = next(q for q in profiles["frontier"].queues if q.name == "batch")
    assert batch.max_nodes == 9472 and batch.max_walltime_for(9472) == "12:00:00"  # OLCF's largest bin
    stampede3 = profiles["stampede3"]
    assert stampede3.gpu_memory_gb == 96 and "24 H100 nodes" in stampede3.queues[0].note  # 3stampede/system.md
    assert {"--gres", "--gpus-per-task", "--mem"} <= set(profiles["lonestar6"].rejected_directives)  # 6lonestar/running.md


# --- issue 17 item 6: per-site needs as typed profile fields, carried by every port ----------------

def _rendered(cluster: str, **intent_fields) -> dict[str, str]:
    """Every supported row of `cluster` rendered for a 2-node job, by row id."""
    intent = JobIntent(nodes=2, entrypoint="train.py", script_args=[], **intent_fields)
    profile = get_profile(cluster)
    return {t.id: render(intent, profile, t, "job.sh") for t in load_templates() if t.cluster == cluster and t.supported}


@pytest.mark.parametrize("cluster, given, written", [
    ("jeanzay-h100", "abc", "abc@h100"), ("jeanzay-h100", "abc@a100", "abc@h100"), ("jeanzay-h100", "abc@h100", "abc@h100"),
    ("jeanzay-a100", "abc", "abc@a100"), ("leonardo", "EUHPC_A01_001", "EUHPC_A01_001")])
def test_idris_ports_charge_the_partitions_hour_pool(cluster, given, written):
    # IDRIS: the account's @h100/@a100 suffix names the hour pool, which must match the partition.
    for row, script in _rendered(cluster, account=given, account_given=True).items():
        assert re.findall(r"(?m)^#SBATCH --account=(\S+)$", script) == [written], row


def test_a_site_ratio_of_cpus_per_gpu_is_what_each_gpus_rank_asks():
    with_ratio = {name: p for name, p in load_profiles().items() if p.cpus_per_gpu}
    assert {"gadi", "marenostrum5", "leonardo", "jeanzay-h100", "jeanzay-a100"} <= set(with_ratio)
    for name, profile in with_ratio.items():
        for row, script in _rendered(name).items():
            if profile.scheduler == "pbs":  # NCI: ncpus = 12 x ngpus, job-wide
                [gpus] = re.findall(r"(?m)^#PBS -l ngpus=(\d+)$", script)
                assert re.search(rf"(?m)^#PBS -l ncpus={int(gpus) * profile.cpus_per_gpu}$", script), row
            elif row.endswith(("-pytorch-ddp", "-deepspeed-zero3", "-generic")):  # one rank per GPU
                assert f"--cpus-per-task={profile.cpus_per_gpu}\n" in script, row


def test_a_ratio_that_does_not_fill_the_node_is_refused():
    data = get_profile("marenostrum5").model_dump()
    with pytest.raises(ValueError, match="cpus_per_gpu 16 x 4 GPUs is not the node's 80 CPUs"):
        ClusterProfile.model_validate({**data, "cpus_per_gpu": 16})


def test_a_profiles_master_address_is_every_shapes_rendezvous():
    # JSC: the first node's InfiniBand name (hostname + "i"); the others keep their scheduler's form.
    juwels = get_profile("juwelsbooster")
    assert juwels.master_addr and juwels.launch_template is None  # a field now, not a template file
    for row, script in _rendered("juwelsbooster").items():
        assert f"\nMASTER_ADDR={juwels.master_addr}\n" in script, row
    for row, script in _rendered("jupiter").items():
        assert '\nMASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)\n' in script, row


PYXIS = CONTAINER.replace(f"apptainer exec --nv docker://{IMAGE}",
                          f"--container-image={IMAGE.replace('/', '#', 1)} --container-mounts=/data:/data")


def test_a_pyxis_source_ported_to_daint_runs_its_image_through_the_container_engine():
    """container-engine/ and edf/ (read 2026-11-28): `srun --environment=<EDF>` runs each step in the
    EDF's image; the aws_ofi_nccl hook gives NCCL the Slingshot plugin (resource-hook/)."""
    intent = extract(PYXIS, "job.sh")
    assert (intent.container.runtime, intent.container.image) == ("pyxis", IMAGE.replace("/", "#", 1))
    script = port_in_image("daint", PYXIS, source_cluster="isambard-ai")  # an aarch64 + NVIDIA image
    edf = script[script.index('cat > "$PWD/maple-environment-$SLURM_JOB_ID.toml" <<EOF\n'):].split("\n", 1)[1].split("\nEOF\n")[0]
    parsed = tomllib.loads(edf.replace("$PWD", "/scratch/job"))
    assert parsed["image"] == "nvcr.io#" + IMAGE.split("/", 1)[1]
    assert parsed["annotations"]["com"]["hooks"]["aws_ofi_nccl"]["enabled"] == "true"
    assert parsed["workdir"] == "/scratch/job" and "/scratch/job:/scratch/job" in parsed["mounts"]
    assert re.search(r'^srun [^\n]*--environment="\$PWD/maple-environment-\$SLURM_JOB_ID.toml" \\$', script, re.M)
    assert "module load" not in script  # the image brings the framework
    profile = get_profile("daint")
    profile = profile.model_copy(update={"container": profile.container.model_copy(update={"allowed_images": [IMAGE]})})
    checks = static_checks(script, intent.__class__(**{**intent.__dict__, "source_cluster": "isambard-ai"}), profile)
    assert [c for c in checks if not c.ok and c.severity == "error"] == []


def test_an_x86_image_is_not_run_on_daint_and_the_port_says_why():
    script = port_in_image("daint")  # apptainer with an NGC image from an unknown (so x86_64) machine
    assert "--environment" not in script and "maple-environment" not in script
    assert re.search(r"# Note: .*not used here: it is built for x86_64 .* Daint is aarch64", script)


def test_a_pyxis_site_gets_the_image_mounts_and_workdir_as_srun_options():
    """pyxis README (github.com/NVIDIA/pyxis, read 2026-11-28): --container-image, --container-mounts,
    --container-workdir are srun options; a profile naming runtime pyxis (none does yet) gets them."""
    intent = extract(PYXIS, "job.sh")
    intent = intent.__class__(**{**intent.__dict__, "source_cluster": "isambard-ai"})
    profile = get_profile("daint")
    pyxis = profile.container.model_copy(update={"runtime": "pyxis", "allowed_images": [IMAGE], "binds": []})
    script = render(intent, profile.model_copy(update={"container": pyxis}), best_template(intent, "daint"), "job.sh")
    image = "nvcr.io#" + IMAGE.split("/", 1)[1]
    assert re.search(rf'^srun [^\n]* --container-image={re.escape(image)} --container-mounts="\$PWD" '
                     r'--container-workdir="\$PWD" \\$', script, re.M)
    assert "maple-environment" not in script
