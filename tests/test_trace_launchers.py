"""The trace's stand-ins read launchers as their own documents say (issue 25: the classes of the
corpus's misses, each fixed from the launcher's docs, not per script): `colossalai run` and
`composer` as the torchrun they start, jsrun's default of one task per resource set, `flux hostlist`'s
options, srun running a bare name from the working directory, nsys's switches that take values,
argparse launchers after an empty variable, and a `cd` into a site folder the sandbox lacks. PBS,
Flux and LSF do not run here: their stand-ins follow their published manuals (named in grammars.yaml)."""

from pathlib import Path

from maple_ci.trace import trace_script
from maple_ci.trace.compare import first_rank

SLURM = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n"


def rank_zero(tmp_path: Path, text: str, name: str = "job.sbatch", **files) -> list:
    (tmp_path / "train.py").write_text("import torch\n")
    for file, content in files.items():
        (tmp_path / file).write_text(content)
        (tmp_path / file).chmod(0o755)
    (tmp_path / name).write_text(text)
    trace = trace_script(tmp_path / name, checkout=tmp_path)
    ranks = first_rank(trace)
    return ranks[-1].program if ranks else []


def test_colossalai_run_starts_torchrun_workers_on_its_program(tmp_path):
    path_text = SLURM + "colossalai run --nproc_per_node 4 --master_port 29600 train.py --lr 1e-4\n"
    (tmp_path / "job.sbatch").write_text(path_text)
    (tmp_path / "train.py").write_text("")
    trace = trace_script(tmp_path / "job.sbatch", checkout=tmp_path)
    assert [r.program for r in trace.ranks] == [["train.py", "--lr", "1e-4"]] * 4
    assert {r.env["WORLD_SIZE"] for r in trace.ranks} == {"4"} and trace.ranks[0].via == ["torchrun"]


def test_composer_without_n_starts_one_worker_per_device(tmp_path):
    assert rank_zero(tmp_path, SLURM + "composer train.py yamls/mpt.yaml max_duration=10ba\n") == \
        ["train.py", "yamls/mpt.yaml", "max_duration=10ba"]
    trace = trace_script(tmp_path / "job.sbatch", checkout=tmp_path)
    assert len(trace.ranks) == 4  # the node's four devices


def test_an_empty_variable_before_an_option_leaves_torchrun_its_program(tmp_path):
    # argparse reads `--nnodes --master_port 29500` as two options: the empty $NNODES takes no word
    text = SLURM + "torchrun --nproc_per_node 2 --nnodes $NNODES --master_port 29500 train.py --x 1\n"
    assert rank_zero(tmp_path, text) == ["train.py", "--x", "1"]


def test_srun_runs_a_bare_name_from_the_working_directory(tmp_path):
    wrapper = "#!/bin/bash\nexec python train.py --from-wrapper\n"
    assert rank_zero(tmp_path, SLURM + "srun --label run.sh\n", **{"run.sh": wrapper}) == ["train.py", "--from-wrapper"]


def test_nsys_profile_switches_take_their_values(tmp_path):
    text = SLURM + "srun nsys profile -s none -t nvtx,cuda --force-overwrite true -o out python train.py --a\n"
    assert rank_zero(tmp_path, text) == ["train.py", "--a"]


def test_a_cd_into_a_site_folder_goes_on_under_set_e(tmp_path):
    text = SLURM + "set -euo pipefail\ncd /code/Megatron-DeepSpeed\nsrun python train.py --after-cd\n"
    assert rank_zero(tmp_path, text) == ["train.py", "--after-cd"]
    trace = trace_script(tmp_path / "job.sbatch", checkout=tmp_path)
    assert ["cd", "/code/Megatron-DeepSpeed"] in trace.not_run


def test_slurm_ntasks_counts_the_tasks_per_node_on_the_submit_time_nodes(tmp_path):
    text = "#!/bin/bash\n#SBATCH --ntasks-per-node=8\nset -u\nsrun python train.py --tasks $SLURM_NTASKS\n"
    assert rank_zero(tmp_path, text) == ["train.py", "--tasks", "16"]  # two nodes when -N is left to sbatch


def test_jsrun_without_a_counts_one_task_per_resource_set(tmp_path):
    # OLCF's jsrun quick start: -n resource sets, -a tasks per set; `jsrun --nrs 1 -r 1 hostname` is one host
    text = ("#!/bin/bash\n#BSUB -nnodes 2\nhead=$(jsrun --nrs 1 -r 1 hostname)\n"
            "jsrun -r 1 torchrun --nnodes 2 --nproc_per_node 4 --rdzv_endpoint $head:29500 train.py\n")
    assert rank_zero(tmp_path, text, name="job.lsf") == ["train.py"]


def test_flux_hostlist_answers_its_options(tmp_path):
    text = ("#!/bin/bash\n#flux: -N 4\nfirst=$(flux hostlist -l -n 0)\ncount=$(flux hostlist -c)\n"
            "all=$(flux hostlist -e -d ,)\nflux run -N 1 -n 1 python train.py $first $count $all $(flux hostlist)\n")
    assert rank_zero(tmp_path, text, name="job.flux") == ["train.py", "n001", "4", "n001,n002,n003,n004", "n[001-004]"]


def test_llamafactory_cli_launches_torchrun_on_its_module_when_forced_or_on_several_devices(tmp_path):
    forced = SLURM + "FORCE_TORCHRUN=1 NNODES=2 NPROC_PER_NODE=4 llamafactory-cli train cfg.yaml\n"
    assert rank_zero(tmp_path, forced) == ["-m", "llamafactory.launcher", "cfg.yaml"]
    trace = trace_script(tmp_path / "job.sbatch", checkout=tmp_path)
    assert len(trace.ranks) == 4 and trace.ranks[0].env["WORLD_SIZE"] == "8"
    # without FORCE_TORCHRUN: torchrun when more than one device is visible (cli.py: get_device_count() > 1),
    # one worker per device; on one device it trains in its own process, the console script is the program
    assert rank_zero(tmp_path, SLURM + "llamafactory-cli train cfg.yaml\n") == ["-m", "llamafactory.launcher", "cfg.yaml"]
    assert len(trace_script(tmp_path / "job.sbatch", checkout=tmp_path).ranks) == 4
    one = SLURM + "CUDA_VISIBLE_DEVICES=2 llamafactory-cli train cfg.yaml\n"
    assert rank_zero(tmp_path, one) == ["llamafactory-cli", "train", "cfg.yaml"]
