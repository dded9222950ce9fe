"""Issue 15 item 5, the bot's part: a fork's script is read in a child process within memory, CPU
and wall-clock limits, and a script that needs more gets a clear refusal in the thread, with no
branch and no PR. Driven against the fake GitHub (a stand-in for github.com).

The step and byte budgets already stop every known pathological form at the default limits (the
first test); the child's own limits are for forms not yet known, so the other tests lower them
to make a known form exceed them."""

from contextlib import nullcontext

import pytest
from scenarios import comment_plan

from maple_ci.errors import MapleError
from maple_ci.extract.isolated import Limits, extract_isolated
from maple_ci.github.bot import run_plan
from maple_ci.github.commands import BotCommand
from maple_ci.github.config import Config
from maple_ci.github.pipeline import Pipeline

# A value that doubles itself 40 times: 1 TiB if nothing stops it (an OOM kill before issue 15).
DOUBLING = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=4\na=x\n" + "a=$a$a\n" * 40 + "srun python train.py $a\n"
PLAIN = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=4\nsrun python train.py --lr 3e-4\n"


def checkout(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return lambda ref: nullcontext(tmp_path)


def comment_on(fake, repo, webhook, source_pr, pipeline):
    """`/maple port perlmutter` on PR #1, answered by the real pipeline; what GitHub holds before."""
    refs, pulls = dict(fake.refs), list(fake.pulls)
    plan, _ = comment_plan(webhook, source_pr["number"], "/maple port perlmutter")
    with pytest.raises(MapleError) as error:
        run_plan(repo, plan, pipeline.port, pipeline.verify)
    assert fake.refs == refs and fake.pulls == pulls  # no branch, no PR
    [reply] = fake.comments
    assert [r["content"] for r in fake.reactions] == ["eyes", "confused"]
    return str(error.value), reply["body"]


@pytest.mark.parametrize("limits, said", [
    (Limits(), "would expand or parse more than 8 MiB of text"),  # the budget, inside the child
    (Limits(memory_mb=4), "jobs/train.sh: reading the script needs more than 4 MiB of memory"),
    (Limits(wall_s=0.01), "jobs/train.sh: reading the script took longer than 0.01 s"),
])
def test_a_script_beyond_the_limits_is_refused_in_the_thread(fake, repo, webhook, source_pr, tmp_path, limits, said):
    pipeline = Pipeline(Config(), checkout(tmp_path, {"jobs/train.sh": DOUBLING}), env={}, limits=limits)
    error, reply = comment_on(fake, repo, webhook, source_pr, pipeline)
    assert said in error and said in reply


def test_the_nightly_verify_reads_ported_scripts_within_the_limits(tmp_path):
    # `verify` (nightly, `/maple verify`) reads whatever is under the output folder at that ref
    pipeline = Pipeline(Config(), checkout(tmp_path, {"scripts/perlmutter/train.sbatch": DOUBLING}), env={},
                        limits=Limits(memory_mb=4))
    with pytest.raises(MapleError, match="scripts/perlmutter/train.sbatch: reading the script needs more than 4 MiB"):
        pipeline.port(BotCommand("verify"), (), "c0")


def test_a_plain_script_reads_as_in_process(tmp_path):
    from maple_ci.extract import extract

    (tmp_path / "train.sh").write_text(PLAIN)
    isolated = extract_isolated(PLAIN, "train.sh", tmp_path)
    assert isolated == extract(PLAIN, "train.sh", base_dir=tmp_path)
    assert (isolated.entrypoint, isolated.script_args, isolated.gpus_per_node) == ("train.py", ["--lr", "3e-4"], 4)

