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
    assert any(note.startswith("source cluster JSC JUWELS Booster, from `#SBATCH --partition=develbooster`")
               for note in intent.notes), intent.notes


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
