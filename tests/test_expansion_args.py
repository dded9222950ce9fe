"""Shell expansions in a program's arguments, carried as bash evaluates them (issue 25 classes 1 and 3;
bash(1) "Parameter Expansion" and "Arithmetic Expansion"): the trace of the source and of its port is
the oracle. PBS is emulated by the trace (no PBS server runs here): a stand-in built from PBS's
documented job variables (maple_ci/schedulers/pbs.py)."""

from pathlib import Path

from maple_ci.shell_words import shell_word
from maple_ci.trace import trace_script
from maple_ci.trace.compare import first_rank

from checkout import ported_once

HEAD = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=4\n#SBATCH -t 00:20:00\n"


def _argv(tmp_path: Path, body: str, target: str, args: tuple = ()) -> tuple:
    """Rank 0's arguments in the source's trace and in its port's, and the port's text."""
    path, script = ported_once(tmp_path, HEAD + body, target)
    source = first_rank(trace_script(path, args=args, trusted=True))[-1].argv[1:]
    ported = first_rank(trace_script(path, cluster=target, nodes=1, text=script, args=args, trusted=True))
    assert source == ported[-1].argv[1:]
    return source, ported[-1].argv[1:], script


def test_a_subjob_index_inside_arithmetic_stays_evaluated_on_the_target(tmp_path):
    body = "#SBATCH --array=2-5\nseed=7\nsrun python fit.py --shard $((SLURM_ARRAY_TASK_ID * 2 + seed))\n"
    source, ported, script = _argv(tmp_path, body, "polaris")
    assert '"$((PBS_ARRAY_INDEX * 2 + 7))"' in script
    assert source == ported and source[-1].isdigit()


def test_a_job_argument_with_a_default_stays_a_job_argument(tmp_path):
    body = "srun python fit.py --tag ${1:-base} --mode ${2:-eval}\n"
    given = _argv(tmp_path, body, "perlmutter", args=("run7",))
    assert given[0][-4:] == given[1][-4:] == ["--tag", "run7", "--mode", "eval"]
    assert '"${1:-base}"' in given[2]
    bare = _argv(tmp_path, body, "perlmutter")
    assert bare[0][-4:] == bare[1][-4:] == ["--tag", "base", "--mode", "eval"]


def test_a_job_argument_whose_default_is_another_expansion_keeps_both_live(tmp_path):
    """`${1:-${CFG:-a.yaml}}` (the argument, else a variable, else a file): the script never sets CFG,
    so the submitter's environment may (sbatch(1) --export=ALL by default): both stay live (before:
    CFG's default was frozen into the port, and earlier still the whole word was literal text)."""
    body = 'CONFIG_FILE=${1:-${CFG:-conf/a.yaml}}\nsrun python fit.py --config $CONFIG_FILE\n'
    given = _argv(tmp_path, body, "perlmutter", args=("conf/b.yaml",))
    assert given[1][-2:] == ["--config", "conf/b.yaml"] and '"${1:-${CFG:-conf/a.yaml}}"' in given[2]
    assert _argv(tmp_path, body, "polaris")[1][-2:] == ["--config", "conf/a.yaml"]


def test_what_cannot_be_kept_live_stays_literal_text():
    # command substitution and arithmetic over names the scheduler does not set are never run by a port
    assert shell_word("$((FOO + 1))") == "'$((FOO + 1))'"
    assert shell_word("x$((SLURM_ARRAY_TASK_ID))$(id)").startswith("'")
    assert shell_word("${x:-$(id)}") == "'${x:-$(id)}'"
    # an unquoted ${v:+word} of an unset v is no word in the source; quotes would make it an empty one
    assert shell_word("${v:+--flag}") == "'${v:+--flag}'"


def test_brace_expansion_makes_the_words_bash_makes(tmp_path):
    body = 'srun python fit.py --seeds {1..3} --out=run{a,b} --spec "{x,y}" ${tag:-{p,q}}\n'
    source, ported, _ = _argv(tmp_path, body, "polaris")
    assert source[-9:] == ["--seeds", "1", "2", "3", "--out=runa", "--out=runb", "--spec", "{x,y}", "{p,q}"]


def test_a_quoted_empty_argument_stays_a_word_where_an_empty_job_argument_makes_none():
    """bash: `''` is one (empty) word; an unquoted `${5:-}` with no fifth argument is none."""
    from maple_ci.extract import extract

    intent = extract("#!/bin/bash\n#SBATCH -N 1\nsrun python fit.py --tag '' --b ${5:-} --c x\n")
    assert intent.script_args == ["--tag", "", "--b", "--c", "x"]


def test_a_comment_in_backquotes_inside_a_continued_launch_is_no_word():
    """`` `# why` `` between continued lines (a way to comment an option): bash substitutes nothing."""
    from maple_ci.extract import extract

    intent = extract("#!/bin/bash\n#SBATCH -N 1\nsrun python \\\n  `# the site's own wrapper` \\\n  fit.py --x 1\n")
    assert (intent.entrypoint, intent.script_args) == ("fit.py", ["--x", "1"])
