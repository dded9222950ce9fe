"""Launch lines are read by each launcher's own option grammar (issue 16, cause 2): an option's
value is never taken for the program, a GPU-affinity wrapper never becomes it, and the size a line
starts is read the launcher's way. The grammars are one registry (maple_ci/launchers)."""

import pytest

from maple_ci.extract import extract_script
from maple_ci.launchers import DL_LAUNCHERS, MPI_LAUNCHERS, grammar, launcher, parse_options

PBS = "#!/bin/bash\n#PBS -l select=2\n#PBS -l walltime=01:00:00\n"
SLURM = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH -t 01:00:00\n"


@pytest.mark.parametrize("header, line, per_node, world", [
    # HPE Cray ALPS: --cc/-cc take a value, -b/-ss/-q none, -d16 attached
    (PBS, "aprun -n 8 -N 4 --cc depth -d 16 -j 1 ./wrap.sh python3 train.py --lr 1", 4, 8),
    (PBS, "aprun -n 8 -N 4 -cc none -b -ss -q -d16 python train.py --lr 1", 4, 8),
    (PBS, "aprun --pes 8 --pes-per-node 4 --cpu-binding numa_node -e OMP_NUM_THREADS=4 python train.py --lr 1", 4, 8),
    # PALS mpiexec (Polaris) and MPICH Hydra
    (PBS, "mpiexec -n 8 --ppn 4 --depth=8 --cpu-bind depth --no-transfer --line-buffer python3 train.py --lr 1", 4, 8),
    (PBS, "mpiexec -n 8 -ppn 4 -f $PBS_NODEFILE -genv OMP_NUM_THREADS 8 -bind-to core:8 -l python train.py --lr 1", 4, 8),
    # Open MPI: -N per node, --mca pairs, -x, flags that take no value, a wrapper in front
    (SLURM, "mpirun -np 8 -N 4 --mca pml ucx -x NCCL_DEBUG=INFO --report-bindings --display-map --tag-output "
            "./gpu_bind.sh python train.py --lr 1", 4, 8),
    (SLURM, "mpirun -np 8 --map-by ppr:4:node --bind-to none -d --oversubscribe ./gpu_bind.sh python train.py --lr 1", 4, 8),
    (SLURM, "mpirun -c 8 -npernode 4 -mca btl_tcp_if_include ib0 bash ./select_gpu python train.py --lr 1", 4, 8),
    # srun with an export list, TACC ibrun with the affinity helper, LSF jsrun resource sets
    (SLURM, "srun -n 8 --ntasks-per-node 4 --export=ALL,NCCL_DEBUG=INFO --gpu-bind=closest python train.py --lr 1", 4, 8),
    ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH -n 8\n", "ibrun -n 8 -o 0 task_affinity python3 train.py --lr 1", 4, 8),
    ("#!/bin/bash\n", "jsrun -n 4 -a 2 -c 14 -g 2 -r 2 --bind packed:7 -E OMP_NUM_THREADS=7 python train.py --lr 1", 4, 8),
])
def test_options_are_read_by_the_launcher_s_grammar(header, line, per_node, world):
    intent = extract_script(header + line + "\n")
    assert (intent.entrypoint, intent.script_args) == ("train.py", ["--lr", "1"])
    assert (intent.gpus_per_node, intent.world_size) == (per_node, world)
    assert intent.launcher == line.split()[0]


def test_an_option_value_is_never_the_program():
    """What the old shared MPI grammar did: `--cc depth` gave the program `depth`."""
    opts, rest = parse_options("-n 8 -N 4 --cc depth -d 16 ./wrap.sh python3 train.py".split(), grammar("aprun"))
    assert rest[0] == "./wrap.sh" and opts["cpu_bind"] == ["depth"]
    opts, rest = parse_options("-np 8 -d --display-map python train.py".split(), grammar("mpirun"))
    assert rest[0] == "python" and "depth" not in opts  # Open MPI's -d is a debug flag, PALS's a depth


def test_srun_s_export_list_gives_its_variables_not_all():
    intent = extract_script(SLURM + "srun -n 8 --export=ALL,MIOPEN_USER_DB_PATH=/tmp/miopen,NCCL_DEBUG=INFO "
                                    "python train.py\n")
    assert intent.env.get("NCCL_DEBUG") == "INFO" and intent.env.get("MIOPEN_USER_DB_PATH") == "/tmp/miopen"
    assert not any("," in name or name == "ALL" for name in intent.env)


def test_every_registered_launcher_names_its_source_and_kind():
    assert MPI_LAUNCHERS == {"srun", "mpiexec", "mpirun", "aprun", "ibrun", "jsrun", "lrun", "flux"}
    assert DL_LAUNCHERS == {"torchrun", "deepspeed", "accelerate"}
    for name in MPI_LAUNCHERS | DL_LAUNCHERS:
        assert launcher(name).source.startswith("https://")


@pytest.mark.parametrize("line", [
    "mpirun -np 8 /opt/site/gpu_bind.sh ./train.py --lr 1",
    "mpirun -np 8 ./select_gpu ./train.py --lr 1",
    "aprun -n 8 -N 4 --cc depth ./affinity.sh ./train.py --lr 1",
])
def test_a_gpu_affinity_wrapper_in_front_of_the_program_is_never_the_program(line):
    """Before, a wrapper known by name but outside the checkout was taken for the program when
    the program after it was not started by python."""
    intent = extract_script(SLURM + line + "\n")
    assert (intent.entrypoint, intent.script_args) == ("./train.py", ["--lr", "1"])


def _spellings(name: str) -> list[tuple[str, str]]:
    """(spelling on the line, option name) for every option the grammar knows."""
    spec = grammar(name)
    found = [(("-" if len(alias) == 1 or name in ("aprun", "mpiexec", "mpirun") else "--") + alias, option)
             for alias, option in spec.aliases.items()]
    return found + [("--" + option.replace("_", "-"), option) for option in spec.values | spec.flags]


@pytest.mark.parametrize("name", sorted(MPI_LAUNCHERS | DL_LAUNCHERS))
def test_contract_no_option_of_any_launcher_is_taken_for_the_program(name):
    """Every spelling of every option in the registry, alone in front of the program: the program
    and its arguments come out unchanged (a value option takes `VALUE`, a flag takes nothing)."""
    spec = grammar(name)
    for spelling, option in _spellings(name):
        two = option in spec.pairs or (option == "env" and spec.env_name_value)  # --mca NAME VALUE, -env NAME VALUE
        words = [spelling, "NAME", "VALUE"] if two else [spelling, "VALUE"] \
            if spec.takes_value(option) and not option.startswith("no_") else [spelling]
        subcommand = sorted(spec.subcommands)[:1]  # `flux run -N VALUE train.py`
        opts, rest = parse_options([*subcommand, *words, "train.py", "--lr", "1"], spec)
        assert rest == ["train.py", "--lr", "1"], (spelling, option, opts)
        assert option in opts, (spelling, opts)
