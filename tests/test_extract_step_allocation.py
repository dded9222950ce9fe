"""Issue 25: sizes a script gives without directives. An `srun` run outside a job creates its own
allocation from its options (srun(1)), so its time limit, nodes and GPUs are the job's; a
`torchrun --nproc-per-node=gpu` starts one worker per GPU the script leaves visible
(CUDA_VISIBLE_DEVICES). Scripts written for these tests in styles the corpus does not hold (an
enroot one-liner with a days-long limit, a two-node interactive srun, a workstation torchrun on a
subset of its GPUs).
"""

import pytest

from maple_ci.extract import extract_script


def test_an_srun_outside_a_job_is_its_own_allocation():
    text = ("#!/bin/bash\nsrun --container-image=/enroot/pytorch.sqsh -p A100 --gpus=1 --mem=32G "
            "--time=1-12:00:00 python -m mypkg.train cfg.yaml\n")
    intent = extract_script(text)
    assert (intent.nodes, intent.gpus_per_node, intent.world_size, intent.walltime, intent.queue, intent.strategy) == (
        1, 1, 1, "36:00:00", "A100", "single")


def test_a_multi_node_srun_outside_a_job_keeps_its_layout():
    text = "#!/bin/bash\nsrun -N 2 --ntasks-per-node=4 --gpus-per-node=4 -t 90 python train.py\n"
    intent = extract_script(text)
    assert (intent.nodes, intent.gpus_per_node, intent.world_size, intent.walltime) == (2, 4, 8, "01:30:00")


def test_directives_win_over_the_step():
    text = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gres=gpu:4\n#SBATCH -t 02:00:00\nsrun -t 10 python train.py\n"
    assert extract_script(text).walltime == "02:00:00"


@pytest.mark.parametrize("visible, workers", [("1,3", 2), ("0,1,2,3,4,5,6,7", 8), ("GPU-3b1f,GPU-77aa", 2)])
def test_nproc_per_node_gpu_counts_the_visible_devices(visible, workers):
    text = f"#!/bin/bash\nexport CUDA_VISIBLE_DEVICES={visible}\ntorchrun --standalone --nproc-per-node=gpu train.py\n"
    intent = extract_script(text)
    assert (intent.gpus_per_node, intent.world_size) == (workers, workers)


def test_nproc_per_node_gpu_without_a_visible_list_is_not_guessed():
    intent = extract_script("#!/bin/bash\ntorchrun --standalone --nproc_per_node=gpu train.py\n")
    assert intent.gpus_per_node is None and intent.world_size is None


def test_deepspeeds_openmpi_launcher_args_name_the_ranks_and_hosts(tmp_path):
    """deepspeed --launcher=OpenMPI --launcher_args '-np 2 -H a:1,b:1': one rank on each of two hosts."""
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"stage": 1}}')
    text = ("#!/bin/bash\ndeepspeed --launcher=OpenMPI --launcher_args=' -np 2 -H 10.0.0.1:1,10.0.0.2:1 -x NCCL_DEBUG=INFO' "
            "train.py --deepspeed --deepspeed_config ds.json\n")
    intent = extract_script(text, tmp_path, "run.sh", tmp_path)
    assert (intent.nodes, intent.gpus_per_node, intent.world_size, intent.strategy) == (2, 1, 2, "zero1")
