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
    assert MPI_LAUNCHERS == {"srun", "mpiexec", "mpirun", "aprun", "ibrun", "jsrun", "lrun", "flux", "horovodrun"}
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


# ---- issue 16 item 7: styles the corpus lacked (tests/data/real/styles) ----------------------------
from pathlib import Path as _Path  # noqa: E402

from maple_ci.errors import MapleError as _MapleError  # noqa: E402
from maple_ci.extract import extract as _extract  # noqa: E402

_STYLES = _Path(__file__).parent / "data" / "real" / "styles"


def _style(name: str):
    path = _STYLES / name
    return _extract(path.read_text(), name, path.parent, _STYLES)


def test_a_script_that_qsubs_another_ports_the_submitted_one_with_the_submit_options():
    intent = _style("submit/qsub_sub.sh")
    assert (intent.scheduler, intent.nodes, intent.gpus_per_node, intent.world_size) == ("pbs", 2, 4, 8)
    assert (intent.account, intent.queue, intent.walltime) == ("ml-proj", "workq", "02:00:00")
    assert intent.script_args == ["--epochs", "30", "--data", "/data/imagenet"]  # qsub -v EPOCHS=30,DATA=...
    assert intent.notes[0].startswith("this script submits train_ddp.pbs")


def test_sbatch_options_win_over_the_submitted_scripts_directives_and_its_arguments_reach_the_program():
    intent = _style("submit/sweep_export.sh")  # sbatch --export=ALL,CONFIG_FILE=... --nodes=2 train_cfg.sbatch
    assert (intent.nodes, intent.world_size, intent.script_args) == (2, 8, ["--config", "configs/base.yaml"])
    assert _style("submit/submit.sh").script_args == ["--config=configs/cifar10.yml", "--ni"]  # job.sh "$@"


def test_ssh_and_pdsh_per_node_are_read_through_to_the_launcher_they_start():
    ssh = _style("pernode/dist.sh")  # ${#ip_list[*]} is 4 machines, not the 39 characters of their addresses
    assert (ssh.launcher, ssh.nodes, ssh.gpus_per_node, ssh.world_size, ssh.entrypoint) == ("torchrun", 4, 8, 32, "train.py")
    pdsh = _style("pernode/pdsh_run_ddp.sh")
    assert (pdsh.launcher, pdsh.nodes, pdsh.world_size) == ("torchrun", 2, 16)


def test_console_script_launchers_are_the_launchers_they_amount_to():
    composer = _style("consoles/composer_mpt.sbatch")  # --node_rank $SLURM_NODEID is composer's, not the program's
    assert (composer.launcher, composer.entrypoint, composer.world_size) == ("torchrun", "train.py", 16)
    assert "--node_rank" not in composer.script_args
    factory = _style("consoles/llamafactory_multinode.sbatch")
    assert (factory.entrypoint, factory.script_args) == ("-m llamafactory.launcher", ["examples/train_full/llama3_full_sft.yaml"])
    assert "FORCE_TORCHRUN" not in factory.env
    assert _style("consoles/llamafactory_single.sh").entrypoint == "llamafactory-cli"


def test_a_torchtune_built_in_recipe_is_refused_with_the_commands_that_bring_it_into_the_checkout():
    with pytest.raises(_MapleError) as refusal:
        _style("refusals/tune_builtin.sbatch")
    message = str(refusal.value)
    assert "tune cp lora_finetune_distributed" in message and "--entrypoint 'recipes/lora_finetune_distributed.py" in message


def test_a_program_given_only_on_the_submit_line_is_unknown_with_candidates_and_the_option_to_give():
    intent = _style("refusals/dist_train_with_params.sh")  # torchrun ... "${@:6}"
    assert intent.entrypoint is None and intent.missing == ["entrypoint"]
    hint = intent.notes[-1]
    assert "${@:6}" in hint and "tools_train.py" in hint and "train_ocr.py" in hint
    assert "--entrypoint 'tools_train.py ARGS'" in hint and "/maple port --entrypoint" in hint


def test_the_port_refusal_itself_names_the_candidates_and_the_option_to_give():
    from maple_ci.synthesize import require_port_facts
    with pytest.raises(_MapleError) as refusal:
        require_port_facts(_style("refusals/dist_train_with_params.sh"), "dist_train_with_params.sh")
    message = str(refusal.value)
    assert "cannot port without entrypoint" in message
    assert "tools_train.py" in message and "--entrypoint 'tools_train.py ARGS'" in message
