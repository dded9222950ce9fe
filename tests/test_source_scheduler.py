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
