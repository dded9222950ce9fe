"""Which machine, which scheduler: a source cluster is named only from evidence that names one machine
(maple_ci/extract/identity.py, templates/machines.yaml), and a scheduler's directives are read by their
own grammar. The scripts are small ones of this test's own."""

import pytest

from maple_ci import schedulers
from maple_ci.errors import MapleError
from maple_ci.extract import extract_script
from maple_ci.extract.identity import identify

JSC_DC = """#!/bin/bash
#SBATCH --nodes=2 --gres=gpu:4 --time=00:20:00
#SBATCH --partition=dc-gpu-devel
#SBATCH --account=abc12
source /p/project1/abc12/env/bin/activate
srun python fit.py
"""
JSC_BOOSTER = JSC_DC.replace("dc-gpu-devel", "develbooster")
JSC_BY_PATH_ONLY = JSC_DC.replace("#SBATCH --partition=dc-gpu-devel\n", "")
PBS_GENERIC = """#!/bin/bash
#PBS -l ngpus=2
#PBS -l ncpus=16
#PBS -l walltime=02:00:00
cd $PBS_O_WORKDIR
python fit.py
"""
LLNL_FLUX = """#!/bin/bash
#flux: -N 1
#flux: -t 30m
flux run -N 1 -n 4 -g 1 python fit.py
"""


def test_a_partition_of_a_machine_without_a_profile_names_no_profiled_machine():
    identity = identify(JSC_DC)
    assert identity.cluster is None
    assert "JURECA-DC" in identity.note and "dc-gpu-devel" in identity.note and "/p/project1/" in identity.note
    intent = extract_script(JSC_DC)
    assert intent.source_cluster is None and identity.note in intent.notes


def test_shared_file_systems_count_for_each_machine_that_mounts_them_and_tell_none_apart():
    assert identify(JSC_BOOSTER).cluster == "juwelsbooster"  # its own partition decides
    alone = identify(JSC_BY_PATH_ONLY)
    assert alone.cluster is None and "JUWELS Booster" in alone.note and "JURECA-DC" in alone.note


def test_a_scheduler_s_generic_gpu_resource_names_no_site():
    """PBS Pro's ngpus is a resource many sites define: a job asking for it is from no machine in particular."""
    assert identify(PBS_GENERIC) == identify("#!/bin/bash\npython fit.py\n")
    assert extract_script(PBS_GENERIC).source_cluster is None


def test_one_centre_s_scheduler_directives_do_not_pick_one_of_its_machines():
    identity = identify(LLNL_FLUX)
    assert identity.cluster is None and "El Capitan" in identity.note and "Tuolumne" in identity.note
    assert identify(LLNL_FLUX.replace("flux run", "# on tuolumne\nflux run")).cluster == "tuolumne"


def test_the_port_s_notes_show_the_evidence_that_named_the_machine():
    intent = extract_script(JSC_BOOSTER)
    assert any(note.startswith("source cluster JSC JUWELS Booster, from `--partition=develbooster`")
               for note in intent.notes), intent.notes
    assert not any("#SBATCH" in note for note in intent.notes)  # a port to Flux or PBS holds no Slurm directive text


# --- Cobalt -------------------------------------------------------------------------------------
# A stand-in: no Cobalt runs here (ALCF retired its last Cobalt machines). What it asserts is ALCF's
# published qsub manual, "Cobalt Job Control on BG/Q" (https://www.alcf.anl.gov/user-guides/bgq-cobalt-job-control,
# read 2026-11-29): -n nodes, -t minutes or HH:MM:SS, -q queue, -A project.

COBALT_JOB = """#!/bin/bash -l
#COBALT -n 3
#COBALT -t 45
#COBALT -q single-gpu
#COBALT -A myproj
#COBALT --attrs filesystems=home,eagle
NODES=$(wc -l < $COBALT_NODEFILE)
mpirun -np $NODES -hostfile $COBALT_NODEFILE python fit.py --epochs 3
"""


def test_cobalt_directives_are_read_by_cobalt_s_own_options():
    intent = extract_script(COBALT_JOB)
    assert (intent.scheduler, intent.nodes, intent.walltime, intent.account, intent.queue) == \
        ("cobalt", 3, "00:45:00", "myproj", "single-gpu")
    assert any("--attrs filesystems=home,eagle" in note for note in intent.notes)


@pytest.mark.parametrize("value, clock", [("720", "12:00:00"), ("01:10:20", "01:10:20"), ("5", "00:05:00")])
def test_cobalt_time_is_minutes_or_a_clock(value, clock):
    assert schedulers.get("cobalt").walltime(value) == clock


def test_a_cobalt_time_in_no_documented_form_is_refused_naming_the_line():
    with pytest.raises(MapleError, match=r"line 3: -t .*not a Cobalt time"):
        extract_script(COBALT_JOB.replace("-t 45", "-t 1:30"))


def test_a_bare_qsub_is_still_pbs_s():
    assert schedulers.by_submit("qsub") is schedulers.get("pbs")
    assert schedulers.detect(COBALT_JOB) is schedulers.get("cobalt")


# --- NEC NQSV -----------------------------------------------------------------------------------
# A stand-in: no NQSV runs here and NEC's user guide is not public. What it asserts is NQSV's option
# grammar as CCS Tsukuba's published job scripts use it (maple_ci/schedulers/nqsv.py's sources, read
# 2026-11-29): -b logical hosts, --gpunum-lhost per host, -l elapstim_req the elapsed-time limit.

NQSV_JOB = """#!/bin/sh
#PBS -q small_gpu
#PBS -A grp9
#PBS -b 3
#PBS --cpunum-lhost=24 --gpunum-lhost=2
#PBS -l elapstim_req=0:40:00
#PBS -T intmpi
mpirun ${NQSII_MPIOPTS} -np 6 -ppn 2 python fit.py
"""


def test_a_pbs_block_with_nqsv_s_own_options_is_nqsv_s():
    intent = extract_script(NQSV_JOB)
    assert (intent.scheduler, intent.nodes, intent.gpus_per_node, intent.walltime, intent.account, intent.queue) == \
        ("nqsv", 3, 2, "00:40:00", "grp9", "small_gpu")
    assert "directives not carried over: --cpunum-lhost=24, -T intmpi" in intent.notes


def test_a_pbs_pro_block_stays_pbs_s_even_with_a_dash_b():
    """-b and -T alone are not NQSV's: Torque's qsub has a -b (seconds to wait for the server) of its own."""
    pbs = NQSV_JOB.replace("#PBS --cpunum-lhost=24 --gpunum-lhost=2\n", "").replace("elapstim_req=0:40:00", "walltime=0:40:00")
    assert extract_script(pbs.replace("-T intmpi", "-l select=3:ngpus=2")).scheduler == "pbs"


# --- account and queue: absent, empty ----------------------------------------------------------

def test_an_account_or_partition_given_empty_is_none_with_a_note():
    intent = extract_script("#!/bin/bash\n#SBATCH --account= <account>\n#SBATCH --partition=\n#SBATCH -N 1\nsrun python fit.py\n")
    assert intent.account is None and intent.queue is None
    assert "the source's account is given with no value; read as none given" in intent.notes
    assert extract_script("#!/bin/bash\n#PBS -A ''\n#PBS -l select=1\npython fit.py\n").account is None


def test_job_wide_gpus_of_an_unknown_pbs_site_are_one_node_s():
    """PBS Pro makes a request without select one chunk: on a machine of no known shape, the job's GPUs are one node's."""
    intent = extract_script(PBS_GENERIC)
    assert (intent.source_cluster, intent.nodes, intent.gpus_per_node) == (None, 1, 2)
    gadi = PBS_GENERIC.replace("ngpus=2", "ngpus=8").replace("ncpus=16", "ncpus=96\n#PBS -q gpuvolta")
    on_gadi = extract_script(gadi.replace("python fit.py", "mpirun -np 8 python fit.py"))  # Gadi places 8 on 2 nodes
    assert (on_gadi.source_cluster, on_gadi.nodes, on_gadi.gpus_per_node) == ("gadi", 2, 4)


def test_directives_after_the_first_command_name_the_scheduler_but_apply_nothing():
    """sbatch reads #SBATCH lines only before the first command (sbatch(1)): later ones ask for nothing,
    but the script is still written to be submitted with sbatch."""
    intent = extract_script("#!/bin/bash\nset -eu\n#SBATCH --gres=gpu:2\n#SBATCH --time=9:00:00\npython fit.py\n")
    assert (intent.scheduler, intent.walltime) == ("slurm", None)
    assert any(note.startswith("the #SBATCH lines (from line 3) come after the script's first command") for note in intent.notes)
    assert extract_script("#!/bin/bash\nset -eu\npython fit.py\n").scheduler == "none"


def test_an_mi250x_rocm_stack_is_every_mi250x_machine_s_and_a_pawsey_account_names_setonix():
    rocm = "#!/bin/bash\n#SBATCH -N 2\nmodule load craype-accel-amd-gfx90a rocm/6.0.0\nsrun python fit.py\n"
    alone = identify(rocm)
    assert alone.cluster is None and all(name in alone.note for name in ("Frontier", "LUMI", "Setonix"))
    setonix = identify(rocm.replace("#SBATCH -N 2", "#SBATCH -N 2\n#SBATCH --account=pawsey0123-gpu"))
    assert setonix.cluster is None and setonix.note.startswith("written for Pawsey Setonix, which maple has no profile for")
    assert identify(rocm.replace("srun", "cd /lustre/orion/abc123/proj\nsrun")).cluster == "frontier"
