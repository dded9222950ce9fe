"""LSF as a source (issue 17 item 5): #BSUB directives as OLCF Summit and LLNL Sierra/Lassen scripts
write them, jsrun's resource sets and LLNL's lrun read as the ranks they start, and LSF scripts ported
to Slurm, PBS and Flux machines with the same program, arguments and size. (What every scheduler unit
must do is tests/test_schedulers.py's contract; this file is what LSF's forms add.)"""

import pytest

from maple_ci import schedulers
from maple_ci.errors import MapleError
from maple_ci.extract import extract_script
from maple_ci.port import port_intent
from maple_ci.schedulers.jobvars import translate

LSF = schedulers.get("lsf")

SUMMIT = """#!/bin/bash
#BSUB -P ABC123
#BSUB -W 2:00
#BSUB -nnodes 2
#BSUB -alloc_flags "gpumps smt4"
#BSUB -J resnet50
#BSUB -o resnet50.%J
module load open-ce
jsrun -n 12 -a 1 -c 7 -g 1 python train.py --out runs/$LSB_JOBID
"""


def test_summit_directives_read_as_lsf_reads_them():
    d = LSF.read(SUMMIT)
    assert (d.nodes, d.walltime, d.account, d.queue) == (2, "02:00:00", "ABC123", None)
    assert d.dropped == ['-alloc_flags gpumps smt4', "-o resnet50.%J"]  # listed in the port's header
    assert schedulers.detect(SUMMIT) is LSF


@pytest.mark.parametrize("line, field, value", [
    ("#BSUB -W02:00 -Pprj123", "walltime", "02:00:00"),  # Summit guide's attached form (bsub -W02:00 -Pprj123)
    ("#BSUB -W 45", "walltime", "00:45:00"),  # a bare number is minutes, not seconds as in PBS
    ("#BSUB -W 1:30/hostA", "walltime", "01:30:00"),  # the run limit normalised to a host's clock
    ("#BSUB -G guests", "account", "guests"),  # LLNL's bank
    ("#BSUB -Pprj123", "account", "prj123"),  # OLCF's project
    ("#BSUB -q pdebug", "queue", "pdebug"),
])
def test_each_directive_form(line, field, value):
    assert getattr(LSF.read(f"#!/bin/bash\n{line}\njsrun hostname\n"), field) == value


def test_classic_lsf_slots_and_ptile_give_the_node_count():
    d = LSF.read('#!/bin/bash\n#BSUB -n 8\n#BSUB -R "span[ptile=4]"\n#BSUB -gpu "num=4"\nmpirun python t.py\n')
    assert (d.ntasks, d.ntasks_per_node, d.nodes, d.gpus_per_node) == (8, 4, 2, 4)


def test_an_unreadable_run_limit_is_an_error_on_its_line():
    with pytest.raises(MapleError, match="line 2: -W .*not an LSF run limit"):
        LSF.read("#!/bin/bash\n#BSUB -W 2h\njsrun hostname\n")


def test_a_fix_writes_lsf_minutes_and_no_directive_after_the_first_command():
    fixed = LSF.set_option(SUMMIT, "-W", "06:00:00")  # a debug fix gives HH:MM:SS
    assert "#BSUB -W 6:00\n" in fixed and LSF.read(fixed).walltime == "06:00:00"
    added = LSF.set_option(LSF.remove_option(SUMMIT, "-W"), "-q", "debug")
    assert added.index("#BSUB -q debug") < added.index("module load")
    with pytest.raises(MapleError, match="not a #BSUB option"):
        LSF.set_option(SUMMIT, "--time", "1")


def test_lsf_job_variables_become_the_targets():
    assert translate("$LS_SUBCWD/runs/$LSB_JOBID", "slurm", 4) == "$SLURM_SUBMIT_DIR/runs/$SLURM_JOB_ID"
    assert translate("${LSB_JOBID}", "pbs", 4) == "${PBS_JOBID}"
    assert translate("$LSB_JOBID", "flux", 4) == "$FLUX_JOB_ID"
    with pytest.raises(MapleError, match="reads LS_SUBCWD, which a flux job does not set"):
        translate("$LS_SUBCWD/data", "flux", 4)  # Flux has no submit-directory variable: the port says so


@pytest.mark.parametrize("launch, nodes, per_node, world", [
    ("jsrun -n 12 -a 1 -c 7 -g 1 python train.py", 2, 6, 12),  # resource sets x tasks per set, over 2 nodes
    ("jsrun -n4 -r1 -a6 -c42 -g6 -bpacked:7 python train.py", 4, 6, 24),  # attached short values
    ("jsrun --nrs=2 --rs_per_host=1 --tasks_per_rs=4 --gpu_per_rs=ALL_GPUS python train.py", 2, 4, 8),
    ("lrun -T4 --gpubind=off python train.py", 2, 4, 8),  # -T per node on every node of the allocation
    ("lrun -p8 python train.py", 2, 4, 8),
])
def test_resource_sets_and_lrun_read_as_the_ranks_they_start(launch, nodes, per_node, world):
    size = "4" if "-n4" in launch else "2"
    intent = extract_script(f"#!/bin/bash\n#BSUB -nnodes {size}\n#BSUB -W 30\n{launch}\n")
    assert (intent.scheduler, intent.nodes, intent.gpus_per_node, intent.world_size) == ("lsf", nodes, per_node, world)
    assert (intent.entrypoint, intent.launcher) == ("train.py", launch.split()[0])


@pytest.mark.parametrize("target", ["perlmutter", "frontier", "polaris", "elcapitan"])
def test_a_summit_script_ports_out_with_the_same_program_arguments_and_size(tmp_path, target):
    intent = extract_script(SUMMIT)
    [result] = port_intent(intent, [target], "summit.lsf", tmp_path, python_envs={"default": str(tmp_path / "venv")})
    assert result.status == "ok", (result.reason, [c.message for c in result.checks if not c.ok])
    back = extract_script(result.script)
    unit = schedulers.get(back.scheduler)
    assert back.entrypoint == "train.py" and back.nodes * back.gpus_per_node >= 2
    assert back.script_args == ["--out", translate("runs/$LSB_JOBID", unit.name, back.gpus_per_node)]
    assert "-alloc_flags gpumps smt4" in result.script  # named in the header as not carried


def test_gpu_num_per_task_is_not_a_count_per_host():
    """bsub(1) -gpu: num=N is per host unless written num=N/task; with span[ptile=P] a host holds P tasks."""
    from maple_ci.schedulers import find

    d = find("lsf").read('#BSUB -n 8\n#BSUB -R "span[ptile=4]"\n#BSUB -gpu "num=1/task:mode=shared"\n', strict=False)
    assert (d.gpus_per_task, d.gpus_per_node, d.nodes) == (1, 4, 2)
    d = find("lsf").read('#BSUB -n 8\n#BSUB -gpu "num=2/task"\n', strict=False)
    assert (d.gpus_per_task, d.gpus_per_node) == (2, None)  # the hosts are the scheduler's choice
