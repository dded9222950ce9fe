"""Issue 25: a submitter's `sbatch --export=A=$i` in a loop passes a value its own shell expands per
submission; the job script's $A is then the outside world's, kept as written, while a literal
export (`CONFIG=base.yaml`) is the job's value. Scripts written for this test in a style the corpus
does not hold (a sweep over a loop variable with the sizes on the sbatch line).
"""

from maple_ci.extract import extract_script

SUBMITTER = ("#!/bin/bash\nfor lr in 0.1 0.01; do\n"
             "  sbatch --export=ALL,LR=$lr,CONFIG=base.yaml -p gpu -t 02:00:00 --gres=gpu:1 job.sh\ndone\n")
JOB = "#!/bin/bash\npython train.py --lr $LR --config $CONFIG\n"


def test_an_expanded_export_stays_the_jobs_variable_and_a_literal_one_is_put_in(tmp_path):
    (tmp_path / "job.sh").write_text(JOB)
    intent = extract_script(SUBMITTER, tmp_path, "submit.sh", tmp_path)
    assert intent.script_args == ["--lr", "$LR", "--config", "base.yaml"]
    assert (intent.walltime, intent.queue, intent.gpus_per_node) == ("02:00:00", "gpu", 1)
