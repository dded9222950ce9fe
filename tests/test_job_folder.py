"""The job's own folder and command lists (bash(1) "Lists", the `cd` builtin): a program named after
`cd sub` is sub's file, read for its framework; a launch after `&&` or `;` on a script's first line
(no shebang, no directive) still makes the text a script, not a request in words."""

from pathlib import Path

from maple_ci.extract import extract

KERAS = "import tensorflow as tf\nmodel = tf.keras.Sequential()\n"


def _read(tmp_path: Path, text: str) -> object:
    (tmp_path / ".git").mkdir(exist_ok=True)
    job = tmp_path / "job.sh"
    job.write_text(text)
    return extract(text, job.name, tmp_path)


def test_a_program_named_after_cd_is_read_in_that_folder(tmp_path):
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "fit.py").write_text(KERAS)
    intent = _read(tmp_path, "#!/bin/bash\n#BSUB -gpu \"num=1\"\n#BSUB -W 2:00\ncd code\npython fit.py --epochs 3\n")
    assert (intent.entrypoint, intent.framework) == ("fit.py", "tensorflow")


def test_a_launch_after_a_command_list_is_a_script(tmp_path):
    (tmp_path / "fit.py").write_text(KERAS)
    for first in ("export CUDA_VISIBLE_DEVICES=1 && ", "cd . ; ", "module load tf || "):
        intent = _read(tmp_path, first + "python fit.py --epochs 3 \\\n    --lr 0.1\n")
        assert (intent.entrypoint, intent.script_args, intent.framework) == \
            ("fit.py", ["--epochs", "3", "--lr", "0.1"], "tensorflow"), first


def test_words_about_a_job_stay_a_request():
    intent = extract("train resnet on 2 nodes with 4 gpus each; use python")
    assert intent.entrypoint is None
