"""Job shapes maple read as something else (issue 25, unseen set d): a launcher package's console
script read as what it runs, and a job that runs several programs one after another. Scripts of this
file's own style (PBS, which the corpus's LLaMA-Factory scripts do not use).

- LLaMA-Factory's `llamafactory-cli train CFG` runs `torchrun ... llamafactory/launcher.py CFG` when
  FORCE_TORCHRUN is set or more than one device is visible (get_device_count() > 1), one worker per
  device unless NPROC_PER_NODE says; else it trains in its own process (src/llamafactory/cli.py,
  main(), https://github.com/hiyouga/LLaMA-Factory, read 2026-11-29).
"""

from maple_ci.extract import extract_script

PBS = "#!/bin/bash\n#PBS -l select=1:ngpus={gpus}\n#PBS -l walltime=02:00:00\ncd $PBS_O_WORKDIR\n"


def test_llamafactory_cli_on_a_node_of_several_devices_is_torchrun_on_its_launcher_module():
    intent = extract_script(PBS.format(gpus=3) + "llamafactory-cli train recipes/sft.yaml\n", None, "sft.pbs")
    assert (intent.launcher, intent.entrypoint, intent.script_args) == ("torchrun", "-m llamafactory.launcher",
                                                                        ["recipes/sft.yaml"])
    assert (intent.framework, intent.gpus_per_node, intent.world_size) == ("llamafactory", 3, 3)


def test_llamafactory_cli_on_one_device_trains_in_its_own_process():
    one_gpu = extract_script(PBS.format(gpus=1) + "llamafactory-cli train recipes/sft.yaml\n", None, "sft.pbs")
    assert (one_gpu.entrypoint, one_gpu.world_size) == ("llamafactory-cli", 1)
    pinned = extract_script(PBS.format(gpus=4) + "export CUDA_VISIBLE_DEVICES=1\nllamafactory-cli train recipes/sft.yaml\n",
                            None, "sft.pbs")
    assert pinned.entrypoint == "llamafactory-cli"


def test_the_programs_a_job_runs_besides_the_ported_one_are_each_named_with_their_arguments():
    """pretrain, then score, then export: the port runs one launch; the header names the others word
    for word, so the trace gate (which sees all three) finds each of them named."""
    text = ("#!/bin/bash\n#PBS -l select=2:ngpus=4\ncd $PBS_O_WORKDIR\nSTEPS=500\n"
            "mpiexec -n 8 --ppn 4 python pretrain.py --steps $STEPS\n"
            "mpiexec -n 1 python score.py --ckpt out/$STEPS.pt && python -m tools.export --fmt onnx\n")
    intent = extract_script(text, None, "chain.pbs")
    assert (intent.entrypoint, intent.script_args, intent.world_size) == ("pretrain.py", ["--steps", "500"], 8)
    note = next(n for n in intent.notes if "programs one after another" in n)
    assert "`score.py --ckpt out/500.pt` (line 6)" in note and "`-m tools.export --fmt onnx` (line 6)" in note
    assert note.startswith("the job runs 3 programs")


def test_one_launch_alone_gets_no_note_of_other_programs():
    intent = extract_script("#!/bin/bash\n#PBS -l select=1:ngpus=2\npython -c 'import torch'\n"
                            "mpiexec -n 2 python fit.py\n", None, "one.pbs")
    assert intent.entrypoint == "fit.py" and not any("one after another" in n for n in intent.notes)
