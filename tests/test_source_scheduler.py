"""Source schedulers and source clusters: Grid Engine's `#$` directives (qsub(1): https://gridscheduler.sourceforge.net/htmlman/htmlman1/qsub.html,
read 2026-11-29) and ABCI 2.0's `-l rt_F=N` full-node resource type. No Grid Engine ships in a registry:
these read scripts as text only, as maple does for every source scheduler."""

from maple_ci.extract import extract_script
from maple_ci.schedulers import detect, get

ABCI2 = """#!/bin/sh
#$ -l rt_F=4
#$ -l h_rt=1:00:00
#$ -N mnist_hvd
#$ -cwd
source /etc/profile.d/modules.sh
mpiexec -n 16 -map-by ppr:4:node python3 $HOME/abci-examples/keras_mnist/mnist.py
"""


def test_grid_engine_directives_give_the_nodes_and_walltime():
    d = get("sge").read(ABCI2)
    assert (detect(ABCI2).name, d.nodes, d.walltime) == ("sge", 4, "01:00:00")
    assert d.dropped == ["-cwd"]  # -cwd is Grid Engine's own word, not -c with the value "wd"


def test_a_grid_engine_script_is_not_read_as_from_a_pbs_cluster():
    intent = extract_script(ABCI2, None, "run.sh")  # "abci" is one of ABCI 3.0's signatures; ABCI 3.0 runs PBS
    assert (intent.scheduler, intent.source_cluster, intent.nodes, intent.world_size) == ("sge", None, 4, 16)


def test_the_walltime_is_set_and_capped_in_grid_engine_s_own_words():
    unit = get("sge")
    changed = unit.set_option(ABCI2, "-l h_rt", "2:00:00")
    assert "#$ -l h_rt=2:00:00" in changed and get("sge").read(changed).walltime == "02:00:00"
    capped = unit.capped(unit.effective(unit.options(ABCI2)), 2, 1800)
    assert capped == ["-l", "rt_F=2", "-l", "h_rt=00:30:00"]


def test_a_cluster_whose_nodes_hold_fewer_devices_than_asked_is_not_the_source():
    """Perlmutter's GPU nodes have 4 A100 (templates/clusters/perlmutter.yaml): `-C gpu` asking 8 a node is another machine's."""
    header = "#!/bin/bash\n#SBATCH -C gpu\n#SBATCH -N 2\n#SBATCH -q regular\n#SBATCH --ntasks-per-node {n}\n#SBATCH --gpus-per-task 1\n"
    assert extract_script(header.format(n=4) + "srun python train.py\n", None, "a.sh").source_cluster == "perlmutter"
    assert extract_script(header.format(n=8) + "srun python train.py\n", None, "b.sh").source_cluster is None


def test_olcf_s_nvme_feature_names_frontier():
    script = "#!/bin/bash\n#SBATCH -A abc123\n#SBATCH -N 2\n#SBATCH -C nvme\n#SBATCH -t 00:30:00\nsrun python train.py\n"
    assert extract_script(script, None, "job.sbatch").source_cluster == "frontier"


# Grid Engine's time_specifier (sge_types(5); its parser, sge_parse_num_val in
# source/libs/uti/sge_parse_num_par.c of son-of-gridengine/sge, read 2026-11-29): seconds, or
# hours:minutes:seconds whose zero fields may be left empty. Scripts of this file's own style.
def _sge(h_rt: str, resource: str = "f_node=3") -> str:
    return f"#!/bin/bash\n#$ -S /bin/bash\n#$ -l {resource}\n#$ -l h_rt={h_rt}\nmpirun -np 12 python3 fit.py\n"


def test_grid_engine_times_are_seconds_or_three_fields_some_left_empty():
    unit = get("sge")
    assert unit.read(_sge("5400")).walltime == "01:30:00"
    assert unit.read(_sge("2::30")).walltime == "02:00:30"  # 1:0:1 = 1::1, as the man page writes it
    assert unit.read(_sge("12:00:00")).walltime == "12:00:00"


def test_a_two_field_time_is_refused_in_grid_engine_s_words_not_pbs_s():
    """Grid Engine's parser wants three fields once there is a colon: qsub refuses `1:30`."""
    import pytest

    from maple_ci.schedulers.base import DirectiveError

    with pytest.raises(DirectiveError, match="not a Grid Engine time .*sge_types"):
        get("sge").read(_sge("1:30"))


def test_a_four_field_time_is_read_as_days_first_and_said_so():
    d = get("sge").read(_sge("1:2:00:00"))
    assert d.walltime == "26:00:00"
    assert any("days:hours:minutes:seconds" in note and "sge_types" in note for note in d.notes)


def test_full_node_resource_types_give_nodes_and_their_devices():
    """TSUBAME 3.0's f_node, TSUBAME 4.0's node_f, ABCI 2.0's rt_F and rt_AF are whole nodes."""
    for resource, shape in (("f_node=3", (3, 4)), ("node_f=2", (2, 4)), ("rt_AF=1", (1, 8))):
        d = get("sge").read(_sge("1:00:00", resource))
        assert (d.nodes, d.gpus_per_node) == shape, resource
    intent = extract_script(_sge("0:30:00", "node_f=3"), None, "fit.sh")
    assert (intent.scheduler, intent.nodes, intent.gpus_per_node, intent.world_size) == ("sge", 3, 4, 12)


def test_a_grid_engine_job_s_host_file_and_host_count_size_its_launch_in_the_trace(tmp_path):
    """qsub(1)'s job environment: $NHOSTS and $PE_HOSTFILE ("host slots queue range" a line). A job
    that sizes mpirun from them is traced at its directives' size, 4 ranks a node on 3 nodes."""
    from maple_ci.trace import trace_script

    script = ("#!/bin/bash\n#$ -cwd\n#$ -l node_f=3\n#$ -l h_rt=0:20:0\n"
              "awk '{print $1\" slots=4\"}' \"$PE_HOSTFILE\" > hosts.$JOB_ID\n"
              "mpirun -np $((NHOSTS * 4)) -npernode 4 -hostfile hosts.$JOB_ID python3 fit.py --tag \"$JOB_ID\"\n")
    (tmp_path / "fit.py").write_text("print('fit')\n")
    (tmp_path / "job.sh").write_text(script)
    trace = trace_script(tmp_path / "job.sh", checkout=tmp_path)
    nodes = [r.node for r in trace.ranks]
    # every rank of the first two nodes and the last rank are traced (trace/ranks.py)
    assert {r.world for r in trace.ranks} == {12} and len(set(nodes)) == 3 and nodes.count(nodes[0]) == 4
    assert trace.ranks[0].argv[-1] != ""  # JOB_ID is the job's, not empty


def test_grid_engine_s_job_variables_in_program_arguments_become_the_target_s():
    """`--save ckpt/${JOB_ID}` under Slurm reads SLURM_JOB_ID (qsub(1)'s JOB_ID is the job's id); a
    PBS port reads PBS_JOBID; the node count NHOSTS becomes the port's own $NNODES."""
    from maple_ci.schedulers.jobvars import translate

    assert translate("ckpt/${JOB_ID}/", "slurm", 4) == "ckpt/${SLURM_JOB_ID}/"
    assert translate("run-$JOB_ID", "pbs", 4) == "run-$PBS_JOBID"
    assert translate("--nodes=$NHOSTS", "slurm", 4) == "--nodes=$NNODES"


def test_assigning_a_variable_the_job_s_environment_holds_exports_it_as_bash_does():
    """Grid Engine puts JOB_NAME in the job's environment (qsub(1)): `JOB_NAME=...` in the script
    changes what the program sees. Slurm's job has no JOB_NAME: there the assignment stays the shell's."""
    body = "JOB_NAME=sweep-lr3\nmpirun -np 4 python3 fit.py\n"
    sge = extract_script("#!/bin/bash\n#$ -l node_f=1\n#$ -l h_rt=600\n" + body, None, "a.sh")
    slurm = extract_script("#!/bin/bash\n#SBATCH -N 1\n" + body, None, "b.sh")
    assert sge.env.get("JOB_NAME") == "sweep-lr3" and "JOB_NAME" not in slurm.env


def test_a_boolean_gpu_resource_is_one_gpu_and_says_so():
    """A site's BOOL `gpu` complex (complex(5): TRUE/FALSE): `-l gpu=true` asks for one; before, the
    script was refused as a malformed GPU count."""
    d = get("sge").read("#$ -l gpu=true\n#$ -l h_rt=0:30:0\n#!/bin/bash\npython3 train.py\n")
    assert (d.gpus_per_node, d.walltime) == (1, "00:30:00")
    assert any("gpu=true" in note for note in d.notes)
