"""`maple cluster discover`/`check` on recorded outputs (tests/data/discover/<system>/, each with a
SOURCE naming where and when it was read), and the query runner's bounds.

Recorded systems: the local Slurm test cluster (real Slurm 22.05), MetaCentrum's `qstat -Q -f` and
ALCF Polaris' `pbsnodes` as those centers print them in their public docs, a real LSF host's
`bhosts`/`lshosts -gpu` as its owner published them. PBS and LSF are stand-ins here (no registry
ships them): their readers are tested only on recorded outputs and IBM's documented layouts."""

import os
import stat
import time
from pathlib import Path

import pytest
import yaml

from maple_ci.discover import Fact, NodeShape, discover, lsf, modules, node, slurm
from maple_ci.discover.check import drift
from maple_ci.discover.probe import QUERIES, Live, Recorded
from maple_ci.discover.profile import render
from maple_ci.errors import MapleError
from maple_ci.profiles import ClusterProfile, get_profile

DATA = Path(__file__).parent / "data" / "discover"
SLURM_CONF = Path(__file__).parent / "cluster" / "slurm.conf.in"


def facts_of(system: str):
    return discover(Recorded(DATA / system))


def test_every_recorded_system_names_its_source():
    for folder in DATA.iterdir():
        source = (folder / "SOURCE").read_text()
        assert "2026-" in source and ("http" in source or "tests/cluster" in source), folder


# --- the local Slurm cluster, against its own slurm.conf ---

def test_the_local_clusters_recorded_answers_give_its_configured_facts():
    facts = facts_of("maple-test")
    conf = SLURM_CONF.read_text()
    assert "Sockets=2 CoresPerSocket=32 ThreadsPerCore=2" in conf and "Gres=gpu:4" in conf
    assert facts["scheduler"].value == "slurm"
    assert (facts["gpus_per_node"].value, facts["cores_per_node"].value, facts["scheduler_cpus_per_node"].value) == (4, 64, 128)
    assert facts["queues"].value == [{"name": "gpu", "max_walltime": "01:00:00", "max_nodes": 2, "default": True},
                                     {"name": "debug", "max_walltime": "00:10:00", "max_nodes": 1}]
    assert facts["account_required"].value is False  # AccountingStorageType=accounting_storage/none
    assert facts["gpu_request"].value == "--gpus-per-node={gpus}"  # select/cons_tres
    assert facts["mpi_plugins"].value == ["pmix", "none", "cray_shasta", "pmi2"]
    assert facts["pytorch_module"].value == "pytorch"
    # No sacctmgr (no slurmdbd) and no nvidia-smi recorded: unconfirmed, naming the query that would say.
    assert not facts["accounts"].confirmed and "sacctmgr" in facts["accounts"].command
    assert not facts["gpu_model"].confirmed and facts["gpu_model"].command.startswith("nvidia-smi")


def test_the_written_profile_is_valid_and_every_fact_names_its_query_and_date():
    text = render(facts_of("maple-test"), "maple-test", "2026-11-29", "recorded outputs")
    profile = ClusterProfile.model_validate(yaml.safe_load(text))
    assert profile.queues[0].name == "gpu" and profile.default_queue().name == "gpu"
    assert profile.setup_for("pytorch").modules == ["pytorch"]
    lines = dict(line.split(":", 1) for line in text.splitlines() if line and not line[0] in " #-")
    assert "`scontrol show node --oneliner` (2026-11-29)" in lines["gpus_per_node"]
    assert "`scontrol show partition --oneliner` (2026-11-29)" in lines["queues"]
    assert "unconfirmed: `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader` would say" in lines["gpu_model"]
    assert "unconfirmed: `sacctmgr" in lines["account_example"]
    # What was found but not used is noted with its query too.
    assert "srun --mpi plugins: pmix, none, cray_shasta, pmi2; from `srun --mpi=list` (2026-11-29)" in text


def test_a_bad_name_is_refused_and_nothing_is_rendered():
    with pytest.raises(MapleError, match="--name"):
        render(facts_of("maple-test"), "My Cluster", "2026-11-29", "here")


# --- a real Slurm GPU node as its owners published it ---

def test_a_published_slurm_gpu_node_gives_its_gres_cores_and_cpus():
    """daniilidis-group: a real `scontrol show node` (Slurm 19.05, multi-line, trailing spaces,
    `Gres=gpu:rtx2080ti:4(S:0)`) from the group's public tutorial (SOURCE). The same page's tables
    publish RTX 2080 Ti nodes and partitions batch and <prof>-compute; no partition output."""
    facts = facts_of("daniilidis-group")
    assert facts["scheduler"].value == "slurm"
    assert (facts["gpus_per_node"].value, facts["gpu_type"].value) == (4, "rtx2080ti")
    assert (facts["cores_per_node"].value, facts["scheduler_cpus_per_node"].value, facts["cpu_arch"].value) == (20, 40, "x86_64")
    # Mismatches listed: with no partition output the node's own partitions are named, unconfirmed;
    # they are older than the page's table (compute, kostas-compute vs batch), as is the GRES type
    # (rtx2080ti vs the table's geforce_rtx_2080_ti).
    assert not facts["queues"].confirmed
    assert [q["name"] for q in facts["queues"].value] == ["compute", "kostas-compute"]
    text = render(facts, "daniilidis-group", "2026-11-29", "recorded outputs")
    assert ClusterProfile.model_validate(yaml.safe_load(text)).gpus_per_node == 4


# --- PBS centers' published outputs (stand-in scheduler) ---

def test_metacentrums_published_queue_gives_its_published_two_week_limit():
    facts = facts_of("metacentrum")
    assert facts["scheduler"].value == "pbs" and facts["queue_directive"].value == "queue"
    [queue] = facts["queues"].value
    assert (queue["name"], queue["max_walltime"]) == ("gpu_long", "336:00:00")  # "up to 2 weeks walltime"
    # qstat -Qf names no node limit for it and no pbsnodes was published: said, not guessed.
    assert queue["max_nodes"] == 1 and "node limit unknown" in queue["note"]
    assert not facts["gpus_per_node"].confirmed


def test_polaris_published_node_matches_alcfs_facts_and_the_mismatch_is_named():
    facts = facts_of("polaris")
    polaris = get_profile("polaris")
    assert (facts["gpus_per_node"].value, facts["gpu_model"].value, facts["gpu_vendor"].value) == (4, "A100", "nvidia")
    assert facts["gpus_per_node"].value == polaris.gpus_per_node
    # PBS counts CPUs (64 hardware threads), not cores: the cores stay unconfirmed (ALCF: 32).
    assert facts["scheduler_cpus_per_node"].value == 64 and not facts["cores_per_node"].confirmed
    # The listed mismatch: the shipped profile gives PBS 32 CPUs (no scheduler_cpus_per_node), and
    # `maple cluster check` on the recorded output says so.
    assert polaris.cores_per_node == polaris.cpus_per_node == 32
    found = drift(polaris, facts, Fact(None, "module --terse avail", confirmed=False))
    assert found == ["the scheduler's CPUs per node: the profile says 32, `pbsnodes -a` says 64"]
    assert not facts["gpu_memory_gb"].confirmed  # a name does not say which A100 (40 GB on Polaris)
    assert {"gputype", "ngpus", "ncpus", "system"} <= set(facts["resources"].value)  # what -l select= takes


# --- parsers on the formats' other forms ---

def test_slurm_reads_the_multi_line_form_and_typed_gres():
    text = ("PartitionName=gpu\n   AllowGroups=ALL Default=NO\n   MaxNodes=UNLIMITED MaxTime=2-00:00:00 MinNodes=0\n"
            "   TotalNodes=12\n\nPartitionName=debug\n   Default=YES MaxNodes=2 MaxTime=30:00\n")
    gpu, debug = slurm.partitions(text)
    assert (gpu["max_walltime"], gpu["max_nodes"], gpu["total_nodes"]) == ("48:00:00", None, 12)
    assert (debug["max_walltime"], debug["default"]) == ("00:30:00", True)
    assert slurm.gres_gpus("gpu:a100:4(S:0-1),nvme:1") == (4, "a100")
    assert slurm.mpi_plugins("srun: MPI types are...\nsrun: none\nsrun: pmi2\nsrun: pmix_v3\n") == ["none", "pmi2", "pmix_v3"]


def test_a_module_listing_in_columns_picks_the_default_pytorch():
    # The form of a plain `module avail` (Lmod's columns and markers), as centers' pages print it.
    text = ("-------- /opt/cray/pe/lmod/modulefiles/core --------\n"
            "   cray-python/3.11.5 (D)    pytorch/2.1.0    aws-ofi-nccl/1.9.1\n"
            "   cudatoolkit/12.2          pytorch/2.3.1 (D,L)\n\n  Where:\n   D:  Default Module\n")
    names, defaults = modules.listing(text)
    assert modules.pytorch_module(names, defaults) == "pytorch/2.3.1"
    kinds = modules.by_kind(names)
    assert kinds["ofi_plugin"] == ["aws-ofi-nccl/1.9.1"] and kinds["cuda"] == ["cudatoolkit/12.2"]


def test_the_numa_order_of_gpus_becomes_the_device_order():
    # nvidia-smi topo -m's layout; GPU0 on the last NUMA domain, as NCSA documents for Delta.
    topo = ("\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
            "GPU0\t X \tNV4\tNV4\tNV4\t48-63\t3\nGPU1\tNV4\t X \tNV4\tNV4\t32-47\t2\n"
            "GPU2\tNV4\tNV4\t X \tNV4\t16-31\t1\nGPU3\tNV4\tNV4\tNV4\t X \t0-15\t0\n")
    assert node.device_order(node.numa_of_gpus(topo)) == "3,2,1,0"
    assert node.device_order({0: 0, 1: 0, 2: 1, 3: 1}) is None
    assert node.socket_ifname(["lo", "hsn0", "hsn1", "eth0"]) == "hsn"


# --- the query runner ---

def _fake(tmp_path: Path, name: str, body: str) -> dict:
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}


def test_a_query_runs_its_fixed_argv_without_a_shell(tmp_path):
    env = _fake(tmp_path, "scontrol", 'printf "%s|" "$@"')
    assert Live(env)("slurm_partitions") == "show|partition|--oneliner|"
    with pytest.raises(KeyError):
        Live(env)("rm -rf /")


def test_a_query_that_hangs_is_abandoned_at_the_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr("maple_ci.discover.probe.TIMEOUT_S", 1)
    env = _fake(tmp_path, "scontrol", "sleep 20")
    start = time.monotonic()
    assert Live(env)("slurm_partitions") is None
    assert time.monotonic() - start < 10


def test_no_scheduler_answering_is_a_clear_error(tmp_path):
    with pytest.raises(MapleError, match="login node"):
        discover(Recorded(tmp_path))
    assert set(QUERIES) >= {"slurm_partitions", "pbs_queues", "flux_resources", "lsf_queues"}


# --- drift and user profiles ---

def test_check_names_a_renamed_queue_a_changed_limit_and_a_gone_module(tmp_path):
    facts = facts_of("maple-test")
    text = render(facts, "maple-test", "2026-11-29", "here")
    data = yaml.safe_load(text)
    data["queues"][0]["name"] = "gpu-old"
    data["queues"][1]["max_walltime"] = "00:30:00"
    data["frameworks"]["pytorch"]["modules"] = ["pytorch/9.9"]
    edited = ClusterProfile.model_validate(data)
    listing = (DATA / "maple-test" / "modules.txt").read_text()
    found = drift(edited, facts, Fact(listing, "module --terse avail"))
    assert any("queue gpu-old: not among" in line for line in found)
    assert any("queue debug max_walltime: the profile says '00:30:00'" in line for line in found)
    assert any("module pytorch/9.9 is not in" in line for line in found)
    assert drift(ClusterProfile.model_validate(yaml.safe_load(text)), facts, Fact(listing, "module --terse avail")) == []


def test_a_users_profile_folder_adds_a_cluster_and_a_clash_is_refused(tmp_path, monkeypatch):
    from maple_ci.profiles import load_profiles

    text = render(facts_of("maple-test"), "mine", "2026-11-29", "here")
    (tmp_path / "mine.yaml").write_text(text)
    monkeypatch.setenv("MAPLE_CLUSTERS_DIR", str(tmp_path))
    assert load_profiles()["mine"].gpus_per_node == 4
    (tmp_path / "polaris.yaml").write_text(text.replace("name: mine", "name: polaris").replace("mine-", "polaris2-"))
    with pytest.raises(MapleError, match="defined twice"):
        load_profiles()


# --- more centers' published outputs (Flux is a stand-in here too: no registry ships a system instance) ---

def test_aris_published_partition_matches_its_published_sinfo_table():
    facts = facts_of("aris")
    assert facts["scheduler"].value == "slurm"
    # sinfo table on the same page: compute, 2-00:00:00, 48 nodes; MaxNodes=UNLIMITED -> the partition's nodes.
    assert facts["queues"].value == [{"name": "compute", "max_walltime": "48:00:00", "max_nodes": 48, "default": True}]
    assert not facts["gpus_per_node"].confirmed  # no `scontrol show node` was published


def test_coronas_published_resources_match_llnls_node_and_the_gpu_vendor_is_left_unconfirmed():
    facts = facts_of("corona")
    assert facts["scheduler"].value == "flux"
    assert (facts["gpus_per_node"].value, facts["cores_per_node"].value) == (8, 48)  # 8 MI50, 2 x 24 cores
    # The listed mismatch: flux resource list names no GPU kind, so the vendor (AMD) is not known
    # and the default written is marked unconfirmed, with the query a compute node would answer.
    assert not facts["gpu_vendor"].confirmed
    assert not facts["queues"].confirmed  # no `flux queue list` published


def test_cscs_published_module_listing_gives_its_published_software():
    software = modules.facts(Recorded(DATA / "cscs-prgenv-gnu"))
    kinds = software["software"].value
    assert kinds["mpi"] == ["cray-mpich/8.1.32"] and kinds["cuda"] == ["cuda/12.9.0"]
    assert kinds["nccl"] == ["nccl/2.27.5-1"] and kinds["ofi_plugin"] == ["aws-ofi-nccl/1.16.0"]
    assert kinds["python"] == ["python/3.13.5"]
    # No PyTorch in this uenv, as CSCS says: a profile from it activates the user's environment.
    assert software["pytorch_module"].value == "" and "pytorch" not in kinds


def test_every_recorded_system_with_a_scheduler_writes_a_valid_profile():
    for system in ("maple-test", "aris", "metacentrum", "polaris", "corona", "kilenc"):
        text = render(facts_of(system), system, "2026-11-29", "recorded outputs")
        assert ClusterProfile.model_validate(yaml.safe_load(text)).scheduler == facts_of(system)["scheduler"].value


# --- LSF (stand-in scheduler): a real host's published answers, and IBM's documented layout ---

def test_a_real_lsf_hosts_answers_give_the_gpu_and_slots_its_owner_published():
    """kilenc: a real LSF 10.1.0.6 host's `bhosts` and `lshosts -gpu`, as its owner printed them
    (tests/data/discover/kilenc/SOURCE). He publishes 1 Tesla V100 PCIe 32GB and the default queue
    normal; no `bqueues -l` was printed."""
    facts = facts_of("kilenc")
    assert facts["scheduler"].value == "lsf" and facts["queue_directive"].value == "queue"
    assert facts["gpus_per_node"] == Fact(1, "lshosts -gpu -w")
    # Slots are what LSF counts (bhosts MAX 32); whether cores or threads is the site's choice.
    assert facts["scheduler_cpus_per_node"].value == 32 and not facts["cores_per_node"].confirmed
    # Printed without -w, the model column was cut at 15 characters: kept, but not confirmed.
    assert facts["gpu_type"].value == "TeslaV100_PCIE_" and not facts["gpu_type"].confirmed
    assert "TeslaV100_PCIE_32GB".startswith(facts["gpu_type"].value)
    # Mismatch listed: no queue output was published, so the queue (normal) stays unconfirmed.
    assert not facts["queues"].confirmed and "bqueues -l" in facts["queues"].command


def test_lsf_reads_each_hosts_gpus_in_ibms_documented_multi_gpu_layout():
    """IBM's documented `lshosts -gpu` example (tests/data/discover/lsf-ibm-example/SOURCE): the
    host's name only on its first GPU's line. Counting lines by their first word would give hosts
    named 1, 2 and 3."""
    models = lsf.gpu_models((DATA / "lsf-ibm-example" / "lsf_gpus.txt").read_text())
    assert models == {"hosta": ["TeskaK20c"] * 4, "hostb": ["TeskaK80c"] * 2 + ["TeskaK20c"] * 2,
                      "hostc": ["Vega10_RadeonIn"] * 2}
    hosts = "HOST_NAME STATUS JL/U MAX NJOBS RUN SSUSP USUSP RSV\nhosta ok - 40 0 0 0 0 0\nhostb ok - 40 0 0 0 0 0\n"
    assert lsf.shape(hosts, (DATA / "lsf-ibm-example" / "lsf_gpus.txt").read_text()) == NodeShape(
        4, "TeskaK20c", 40, 40, cores_known=False)


def test_lsf_reads_queue_run_limits_in_the_layout_of_ibms_bqueues_reference():
    """A stand-in written by hand in the layout of IBM's bqueues(1) reference (Spectrum LSF 10.1,
    read 2026-11-29): no published real `bqueues -l` with a RUNLIMIT was found. The MAXIMUM
    RUNLIMIT comes after the DEFAULT one; "of h1" names the host it is normalized to."""
    queues = ("QUEUE: batch\n  -- Default queue for batch jobs.  This is the default queue.\n\n"
              "PARAMETERS/STATISTICS\nPRIO NICE STATUS          MAX JL/U JL/P JL/H NJOBS  PEND   RUN\n"
              " 30   20  Open:Active       -    -    -    -     0     0     0\n\n"
              "DEFAULT LIMITS:\n RUNLIMIT\n 60.0 min\n\nMAXIMUM LIMITS:\n RUNLIMIT\n 720.0 min\n\n"
              "QUEUE: debug\n  -- Short tests.\n\n RUNLIMIT\n 120.0 min of h1\n")
    assert lsf.queues(queues) == [
        {"name": "batch", "default": True, "max_walltime": "12:00:00", "max_nodes": None},
        {"name": "debug", "default": False, "max_walltime": "02:00:00", "max_nodes": None}]
