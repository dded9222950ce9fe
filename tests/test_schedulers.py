"""The scheduler units' contract, run over EVERY registered scheduler (a new unit is tested by
registering it), then what is particular to Slurm's and PBS's directive forms."""

import itertools
import re

import pytest

from maple_ci import schedulers
from maple_ci.errors import MapleError
from maple_ci.extract import extract_script
from maple_ci.schedulers.jobvars import PROCESS_VARS, translate

UNITS = schedulers.all()
CONCEPTS = {"submit_dir", "job_id", "job_name", "array_index", "nodes", "ranks", "ranks_per_node", "node_list",
            "node_file", "rank", "local_rank", "cpus_per_task",  # cpus_per_task: the trace's job (Slurm's -c)
            "cpus", "gpus", "cpus_on_node", "node_cpus",  # the job's CPUs and GPUs in all, a node's CPUs (NCI Gadi's names)
            "array_count", "array_min", "array_max", "array_job_id",  # a job array's constants and id
            "node_index", "node_tmp"}  # a rank's node's index, a node-local folder per job
ids = [unit.name for unit in UNITS]


def option_for(unit, field: str) -> str:
    """The spelling of the unit's option that sets a Directives field (its `fields` table)."""
    name = next(name for name, (target, _) in unit.fields.items() if target == field)
    return " ".join(unit.format_option(name, None))


def test_the_registry_knows_slurm_and_pbs_and_refuses_an_unknown_name():
    assert {"slurm", "pbs"} <= set(schedulers.names())
    with pytest.raises(MapleError, match="no scheduler 'nosuch'; known:"):
        schedulers.get("nosuch")
    assert schedulers.find("none") is None and schedulers.detect("#!/bin/bash\necho hi\n") is None
    # Grid Engine's submit command is PBS's qsub too: a bare submit line names the first of them
    assert all(schedulers.by_submit([f"/usr/bin/{unit.submit[0]}", *unit.submit[1:], "job.sh"]).submit == unit.submit
               for unit in schedulers.all())
    assert schedulers.by_submit("qsub") is schedulers.get("pbs")
    assert schedulers.by_submit("sbatch") is schedulers.get("slurm") and schedulers.by_submit([]) is None
    assert schedulers.by_submit(["srun", "python"]) is None


@pytest.mark.parametrize("unit", UNITS, ids=ids)
def test_a_unit_declares_what_the_others_rely_on(unit):
    assert unit.prefix.startswith("#") and unit.submit and unit.cancel and unit.script_suffix and unit.var_prefix
    assert unit.example and unit.size_options and set(unit.job_vars) <= CONCEPTS
    assert {"walltime", "account"} <= {target for target, _ in unit.fields.values()}


@pytest.mark.parametrize("unit", UNITS, ids=ids)
def test_the_example_reads_as_two_nodes_of_four_gpus_for_ninety_minutes(unit):
    assert schedulers.detect(unit.example) is unit
    d = unit.read(unit.example)
    gpus = None if unit.name == "cobalt" else 4  # Cobalt's qsub has no GPU option (ThetaGPU's queue decides)
    assert (d.scheduler, d.nodes, d.gpus_per_node, d.walltime, d.account, d.queue) == \
        (unit.name, 2, gpus, "01:30:00", "abc", "debug")
    assert d.lines["nodes"] > 1 and d.lines["walltime"] > 1 and not d.errors
    intent = extract_script(unit.example)
    assert (intent.scheduler, intent.nodes, intent.walltime) == (unit.name, 2, "01:30:00")


@pytest.mark.parametrize("unit", UNITS, ids=ids)
def test_directives_after_the_first_command_are_not_read(unit):
    late = unit.example + unit.directive_line(unit.format_option(next(iter(unit.fields)), "9")) + "\n"
    assert unit.read(late) == unit.read(unit.example)


@pytest.mark.parametrize("unit", UNITS, ids=ids)
def test_setting_an_option_writes_it_where_the_scheduler_reads_it(unit):
    spelling = option_for(unit, "walltime")
    changed = unit.set_option(unit.example, spelling, unit.write_walltime("02:00:00"))
    assert unit.read(changed).walltime == "02:00:00"
    assert unit.set_option(changed, spelling, unit.write_walltime("02:00:00")) == changed  # idempotent
    removed = unit.remove_option(unit.example, spelling)
    assert unit.read(removed).walltime is None and unit.read(removed).nodes == 2
    # absent: the new line goes into the directive block, before the first command (review probe 7c)
    added = unit.set_option(removed, spelling, unit.write_walltime("00:10:00"))
    assert unit.read(added).walltime == "00:10:00"
    first_command = next(n for n, line in enumerate(added.splitlines()) if line and not line.startswith("#"))
    assert all(not line.startswith(unit.prefix) for line in added.splitlines()[first_command:])


@pytest.mark.parametrize("unit", UNITS, ids=ids)
def test_an_option_of_another_scheduler_is_refused(unit):
    for other in UNITS:
        spelling = option_for(other, "walltime")
        if other is not unit and not unit.knows(spelling):
            with pytest.raises(MapleError, match="is not a"):
                unit.set_option(unit.example, spelling, "1")


@pytest.mark.parametrize("unit", UNITS, ids=ids)
def test_the_walltime_it_writes_it_reads(unit):
    for clock in ("00:10:00", "01:30:00", "48:00:00"):
        assert unit.walltime(unit.write_walltime(clock)) == clock
    with pytest.raises(ValueError):
        unit.walltime("soon")


@pytest.mark.parametrize("unit", UNITS, ids=ids)
def test_capped_size_options_read_back_capped(unit):
    words = unit.capped(unit.effective(unit.options(unit.example)), 1, 600)
    capped = unit.read("#!/bin/bash\n" + unit.directive_line(words) + "\n")
    assert (capped.nodes, capped.walltime) == (1, "00:10:00")


@pytest.mark.parametrize("unit", UNITS, ids=ids)
def test_job_variables_are_its_own_and_fixed_ones_follow_the_directives(unit):
    for names in unit.job_vars.values():
        assert all(unit.owns_variable(name) and schedulers.by_variable(name) is unit for name in names)
    assert all(unit.owns_variable(name) or name.startswith(unit.name.upper()) for name in unit.job_environment)
    assert not any("PROLOG" in name or "EPILOG" in name for name in unit.job_environment)  # they run programs
    known = unit.known_vars(unit.read(unit.example))
    assert all(unit.owns_variable(name) for name in known)
    assert all(known[name] == "2" for name, field in unit.fixed_vars.items() if field == "nodes")


@pytest.mark.parametrize("source, target", list(itertools.permutations(UNITS, 2)),
                         ids=[f"{a.name}->{b.name}" for a, b in itertools.permutations(UNITS, 2)])
def test_job_variables_translate_to_every_other_scheduler(source, target):
    for concept, names in source.job_vars.items():
        for name in set(names) - source.helper_vars:
            theirs = target.job_vars.get(concept)
            on_node = (target.job_vars.get("cpus_on_node") or [None])[0]
            if name in PROCESS_VARS:  # TMPDIR: any process's, never read as the source job's
                assert translate(f"${name}/x", target.name, 4) == f"${name}/x"
            elif concept in {"nodes", "ranks", "ranks_per_node"}:
                assert "NNODES" in translate(f"${name}", target.name, 4) or concept == "ranks_per_node"
            elif theirs and concept in {"node_index", "local_rank"}:  # per rank; 0 in the batch shell (its first task)
                assert translate(f"${{{name}}}/x", target.name, 4) == f"${{{theirs[0]}:-0}}/x"
            elif theirs:
                assert translate(f"${{{name}}}/x", target.name, 4) == f"${{{theirs[0]}}}/x"
            elif concept == "cpus" and on_node:  # the job's CPUs: a node's over the port's nodes
                assert translate(f"${name}", target.name, 4) == f"$(({on_node} * NNODES))"
            elif concept == "node_cpus" and on_node:
                assert translate(f"${{{name}}}/x", target.name, 4) == f"${{{on_node}}}/x"
            else:
                with pytest.raises(MapleError, match=name):
                    translate(f"${name}", target.name, 4)


@pytest.mark.parametrize("unit", UNITS, ids=ids)
def test_what_the_debug_agent_asks_of_a_unit_is_there(unit):
    for pattern in unit.error_patterns:
        re.compile(pattern)
    assert all(isinstance(command, str) and command for command in unit.site_queries.values())


def test_a_log_names_its_scheduler_by_its_error_lines():
    assert schedulers.from_log("qsub: Job rejected by all possible destinations\n") is schedulers.get("pbs")
    assert schedulers.from_log("sbatch: error: Batch job submission failed\n") is schedulers.get("slurm")
    assert schedulers.from_log("Traceback (most recent call last):\n") is None


# --- Slurm's and PBS's own forms ------------------------------------------------------------------

SLURM, PBS = schedulers.get("slurm"), schedulers.get("pbs")


@pytest.mark.parametrize("value, clock", [("90", "01:30:00"), ("5:30", "00:05:30"), ("1:30:00", "01:30:00"),
                                          ("2-0", "48:00:00"), ("1-2:30", "26:30:00"), ("1-00:00:01", "24:00:01"),
                                          ("UNLIMITED", None)])
def test_slurm_walltime_forms(value, clock):
    assert SLURM.walltime(value) == clock


@pytest.mark.parametrize("value, clock", [("3600", "01:00:00"), ("10:00", "00:10:00"), ("72:00:00", "72:00:00")])
def test_pbs_walltime_forms(value, clock):
    assert PBS.walltime(value) == clock


@pytest.mark.parametrize("lines, nodes, gpus_per_node, ranks_per_node", [
    ("#PBS -l select=2:ncpus=64:ngpus=4:mpiprocs=4", 2, 4, 4),  # PBS Pro chunks
    ("#PBS -lselect=2", 2, None, None),  # attached to -l
    ("#PBS -l select=1:ngpus=4+1:ngpus=4", 2, 4, None),  # chunks joined by +
    ("#PBS -l nodes=2:ppn=4", 2, None, 4),  # Torque
    ("#PBS -l nodes=2:ppn=4:gpus=4", 2, 4, 4),
])
def test_pbs_size_forms(lines, nodes, gpus_per_node, ranks_per_node):
    d = PBS.read(f"#!/bin/bash\n{lines}\nmpiexec python train.py\n")
    assert (d.nodes, d.gpus_per_node, d.ntasks_per_node) == (nodes, gpus_per_node, ranks_per_node)


def test_gadi_job_wide_ncpus_and_ngpus_give_gpus_but_no_node_count():
    # NCI Gadi: `-l ncpus=48,ngpus=4` are the job's totals; the node count follows from the node type.
    d = PBS.read("#!/bin/bash\n#PBS -P ab12\n#PBS -l ncpus=96,ngpus=8\n#PBS -l walltime=10:00:00\nmpirun x\n")
    assert (d.gpus, d.cpus, d.nodes, d.account, d.walltime) == (8, 96, None, "ab12", "10:00:00")
    on_gpuvolta = PBS.on_nodes(d, 48, 4)  # gpuvolta: 48 cores, 4 GPUs per node
    assert (on_gpuvolta.nodes, on_gpuvolta.gpus_per_node, on_gpuvolta.lines["nodes"]) == (2, 4, 3)


@pytest.mark.parametrize("cpus_per_node", [48, 128])
def test_gadi_ngpus_8_on_4_gpu_nodes_reads_as_2_nodes_whatever_the_cpus(cpus_per_node):
    # A Gadi port asks -l ngpus=8 -l ncpus=96: 8 GPUs need two 4-GPU nodes even where a node's CPUs
    # (128, a node shape read from another machine) would hold all 96 CPUs.
    d = PBS.read("#!/bin/bash\n#PBS -q gpuvolta\n#PBS -l ngpus=8\n#PBS -l ncpus=96\nmpirun x\n")
    sized = PBS.on_nodes(d, cpus_per_node, 4)
    assert (sized.nodes, sized.gpus_per_node, sized.lines["nodes"]) == (2, 4, 3)
    assert d.on_nodes_of(cpus_per_node, 4) == sized  # the directives' own reading is the unit's rule


def test_only_the_cpus_say_the_nodes_where_the_gpus_per_node_are_not_known():
    d = PBS.read("#!/bin/bash\n#PBS -l ngpus=8\n#PBS -l ncpus=96\nmpirun x\n")
    assert (d.on_nodes_of(48).nodes, d.on_nodes_of(128).nodes) == (2, 1)
    assert PBS.read("#!/bin/bash\n#PBS -l ngpus=8\nmpirun x\n").on_nodes_of(48).nodes is None


def test_directives_with_a_node_count_keep_it_on_any_node():
    for unit, text in ((PBS, "#PBS -l select=3:ngpus=4\n#PBS -l ngpus=8\n"), (SLURM, "#SBATCH -N 3 --gpus=8\n")):
        assert unit.on_nodes(unit.read(f"#!/bin/bash\n{text}srun x\n"), 48, 4).nodes == 3


def test_slurm_aliases_are_one_option():
    d = SLURM.read("#!/bin/bash\n#SBATCH --tasks-per-node=4 --gpus-per-task=1 -N 2\n#SBATCH -J 'my job'\nsrun x\n")
    assert (d.nodes, d.ntasks_per_node, d.gpus_per_node) == (2, 4, 4)
    assert [o.value for o in SLURM.options("#SBATCH -J 'my job'\n")] == ["my job"]  # quoting honoured
    assert SLURM.canonical("-t") == SLURM.canonical("--time") == "time"


def test_a_slurm_option_is_set_with_its_spelling_kept_before_the_first_command():
    script = "#!/bin/bash\n#SBATCH -N 2\nmodule load x\n#SBATCH -t 30\nsrun x\n"  # -t after a command: ignored
    changed = SLURM.set_option(script, "--time", "01:00:00")
    assert changed == "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --time=01:00:00\nmodule load x\n#SBATCH -t 30\nsrun x\n"
    assert SLURM.set_option(changed, "-t", "02:00:00").count("--time=02:00:00") == 1
    assert SLURM.set_option("#!/bin/bash\n#SBATCH -N2\n", "-N", "4") == "#!/bin/bash\n#SBATCH -N4\n"
    with pytest.raises(MapleError, match="not a #SBATCH option"):
        SLURM.set_option(script, "-l walltime", "1:00:00")


def test_a_pbs_resource_is_set_inside_its_list():
    script = "#!/bin/bash\n#PBS -l select=2,walltime=1:00:00\n#PBS -q debug\nmpiexec x\n"
    changed = PBS.set_option(script, "-l walltime", "02:00:00")
    assert changed.splitlines()[1] == "#PBS -l select=2 -l walltime=02:00:00"
    assert PBS.read(changed).walltime == "02:00:00" and PBS.read(changed).nodes == 2
    assert PBS.set_option(script, "-q", "prod").splitlines()[2] == "#PBS -q prod"
    with pytest.raises(MapleError, match="not a #PBS option"):
        PBS.set_option(script, "--time", "1:00:00")
