"""Values bash gives a launch line that static reading does not know (issue 25, "right or loud";
bash(1) "Looping Constructs", "Arrays", "Shell Parameter Expansion"): a launch inside a loop, an
argument from an array element indexed by a job array's index or a loop's variable, a variable set by
what only the job knows. The port runs what bash would run (its loops and arrays carried), or its
header names the word; never a silent empty word. Each script is written here for the test (none is
from the corpus); bash traces the source and the port (maple_ci/trace, bubblewrap) and rank 0's
programs are compared word for word."""

import re
from pathlib import Path

import pytest

from maple_ci.extract import extract
from maple_ci.port import port_intent
from maple_ci.trace import trace_with_ports
from maple_ci.trace.compare import compare, first_rank, header_of

HEAD = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=4\n#SBATCH -t 00:20:00\n"


def _checkout(tmp_path: Path, text: str) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "fit.py").write_text("import torch\n")
    path = tmp_path / "sweep.sbatch"
    path.write_text(text)
    return path


def _traced(tmp_path: Path, text: str, targets=("perlmutter", "polaris")):
    """(intent, port results, the source's trace, each port's trace)."""
    path = _checkout(tmp_path, text)
    intent = extract(text, str(path), base_dir=tmp_path, root=tmp_path)
    results = port_intent(intent, list(targets), str(path), tmp_path / "out", source_text=text)
    source, ports = trace_with_ports(path, [(r.cluster, r.script) for r in results], checkout=tmp_path,
                                     trusted=True, gpus=intent.gpus_per_node)
    return intent, results, source, ports


def _programs(trace) -> list:
    return [[w for w in rank.program if not w.startswith("--local_rank")] for rank in first_rank(trace)]


@pytest.mark.parametrize("body, expected", [
    # a list loop around the launch, and an array indexed by the job array's index
    ("#SBATCH --array=1-2\nSEEDS=(7 11 13)\nfor opt in adam sgd; do\n"
     "  srun python fit.py --optim=\"$opt\" --seed ${SEEDS[$SLURM_ARRAY_TASK_ID]}\ndone\n",
     [["fit.py", "--optim=adam", "--seed", "11"], ["fit.py", "--optim=sgd", "--seed", "11"]]),
    # a counted loop whose variable indexes an array, through a variable set in the loop
    ("SIZES=(s m l)\nfor ((k = 0; k < 3; k += 2)); do\n  SIZE=${SIZES[$k]}\n"
     "  torchrun --nproc_per_node=4 fit.py --size $SIZE --shard=$k\ndone\n",
     [["fit.py", "--size", "s", "--shard=0"], ["fit.py", "--size", "l", "--shard=2"]]),
    # nested loops
    ("for a in x y\ndo\n  for b in 1 2; do srun python fit.py --a \"$a\" --b=$b; done\ndone\n",
     [["fit.py", "--a", a, f"--b={b}"] for a in "xy" for b in "12"]),
    # `while read` from a here-string the script knows
    ("RUNS=$'alpha\\nbeta'\nwhile read -r run; do\n  srun python fit.py --run \"$run\"\ndone <<< \"$RUNS\"\n",
     [["fit.py", "--run", "alpha"], ["fit.py", "--run", "beta"]]),
])
def test_a_port_runs_each_value_of_the_loop_as_the_source(tmp_path, body, expected):
    intent, results, source, ports = _traced(tmp_path, HEAD + body)
    assert _programs(source)[-len(expected):] == expected  # the oracle itself: bash ran every value
    for result, port in zip(results, ports):
        assert result.status == "ok", (result.cluster, result.checks)
        assert _programs(port) == expected, (result.cluster, result.script)
        assert compare(source, port, header_of(result.script)) == []


def test_a_loop_over_values_only_the_job_knows_is_named_not_silent(tmp_path):
    text = HEAD + "for cfg in $(ls configs); do\n  srun python fit.py --config \"configs/$cfg\"\ndone\n"
    intent, results, source, ports = _traced(tmp_path, text, ("perlmutter",))
    assert intent.loops == [] and intent.script_args == ["--config", "configs/$cfg"]
    header = header_of(results[0].script)
    assert "inside a loop" in header and "line 5: `for cfg in $(ls configs)`" in header
    assert compare(source, ports[0], header) == []  # what differs (no config in the port) is named


@pytest.mark.parametrize("body, word", [
    ("#SBATCH --array=0-3\nNAMES=(a b c d)\nNAME=${NAMES[$SLURM_ARRAY_TASK_ID]}\n", "${NAMES[$SLURM_ARRAY_TASK_ID]}"),
    ("#SBATCH --array=0-3\nI=$SLURM_ARRAY_TASK_ID\nNAMES=(a b c d)\nNAME=${NAMES[$I / 2]}\n", "${NAMES[$SLURM_ARRAY_TASK_ID / 2]}"),
    ("for NAME in a b; do :; done\n", "${NAME}"),
    ("while read -r NAME; do :; done < names.txt\n", "${NAME}"),
    ("NAME=$(hostname -s)\n", "$NAME"),
])
def test_no_empty_word_replaces_an_unknown_expansion(body, word):
    intent = extract(HEAD + body + "srun python fit.py --cfg configs/${NAME}.json\n")
    [cfg] = [arg for arg in intent.script_args if arg.startswith("configs/")]
    assert cfg != "configs/.json" and cfg.replace("${NAME}", "$NAME") == f"configs/{word}.json".replace("${NAME}", "$NAME")


def test_a_variable_the_port_cannot_set_is_named_with_its_line(tmp_path):
    text = HEAD + "TOTAL=64\nACC=$(expr $TOTAL / $SLURM_GPUS_ON_NODE)\nsrun python fit.py --accumulate $ACC\n"
    intent = extract(text)
    assert intent.script_args == ["--accumulate", "$ACC"]
    assert any(re.search(r"reads \$ACC, which the source sets at line 6 .*empty there", n) for n in intent.notes)


def test_an_array_element_the_port_cannot_write_out_is_named():
    # `STEPS=${STEPS[$i]}` assigns element 0 of STEPS itself (bash(1) "Arrays"): the port cannot write that array
    text = HEAD + "#SBATCH --array=0-1\nSTEPS=(100 200)\nSTEPS=${STEPS[$SLURM_ARRAY_TASK_ID]}\nsrun python fit.py --steps $STEPS\n"
    intent = extract(text)
    assert intent.arrays == {} and intent.script_args == ["--steps", "${STEPS[$SLURM_ARRAY_TASK_ID]}"]
    assert any("reads $STEPS" in note for note in intent.notes)


def test_an_unsafe_subscript_or_loop_value_is_not_carried_live():
    from maple_ci.shell_words import shell_word

    assert shell_word("${A[$(touch x)]}", ["A"]).startswith("'")  # a command in a subscript is never run
    assert shell_word("${A[$i]}").startswith("'") and shell_word("${A[$i]}", ["A"]) == "\"${A[$i]}\""  # only a written array
    intent = extract(HEAD + "for v in 'a;b' c; do srun python fit.py --v $v; done\n")
    assert intent.loops == [] and any("inside a loop" in note for note in intent.notes)


def test_a_variable_branches_set_from_what_only_the_job_knows_is_named_with_its_values(tmp_path):
    text = (HEAD + "#SBATCH --array=0-3\nMODES=(off 0.5 0.9 off)\nMODE=${MODES[$((SLURM_ARRAY_TASK_ID))]}\n"
            "if [ \"$MODE\" = off ]; then\n  DROP=dropout=none\nelse\n  DROP=dropout=$MODE\nfi\n"
            "srun python fit.py \"$DROP\" --tag=t\n")
    intent, results, source, ports = _traced(tmp_path, text, ("perlmutter",))
    assert intent.script_args == ["$DROP", "--tag=t"]
    header = header_of(results[0].script)
    assert "reads $DROP" in header and "`dropout=none`" in header
    assert _programs(source)[-1] == ["fit.py", "dropout=none", "--tag=t"]
    assert compare(source, ports[0], header) == []  # the port's empty word is named, with the value it stands for


@pytest.mark.parametrize("words, values", [
    ("$(seq 3)", ["1", "2", "3"]), ("`seq 0 2 $LAST`", ["0", "2", "4"]), ("$(seq 6 -3 0)", ["6", "3", "0"]),
    ("{1..2} x", ["1", "2", "x"]), ('"${NAMES[@]}"', ["a b", "c"]),
])
def test_the_values_a_for_loop_gives_its_variable(words, values):
    intent = extract(HEAD + f"LAST=4\nNAMES=('a b' c)\nfor k in {words}; do srun python fit.py --k \"$k\"; done\n")
    if " " in "".join(values):  # a value that is not a plain word (live.py _PLAIN): named, not carried
        assert intent.loops == [] and any("inside a loop" in note for note in intent.notes)
    else:
        assert intent.loops == [["k", *values]]


def test_the_trace_runs_shuf_so_a_launch_reading_its_output_is_traced(tmp_path):
    """shuf(1) only prints (GNU coreutils): a port number drawn with it reaches the launcher as on the job."""
    from maple_ci.trace import trace_script

    path = _checkout(tmp_path, HEAD + "PORT=$(shuf -i 30000-65000 -n 1)\n"
                     "torchrun --nproc_per_node 4 --master_port $PORT fit.py --port-was-drawn\n")
    assert _programs(trace_script(path, checkout=tmp_path, trusted=True))[0] == ["fit.py", "--port-was-drawn"]
