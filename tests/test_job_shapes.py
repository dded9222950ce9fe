"""Job shapes maple read as something else (issue 25, unseen set d): a launcher package's console
script read as what it runs. Scripts of this file's own style (PBS, which the corpus's LLaMA-Factory
scripts do not use).

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
