"""Extraction is bounded (issue 15, item 5): any input up to the size cap is read in <= 5 s and
<= 512 MiB, or refused with a message naming the limit (exit 2), never hung or killed for memory.
Each pathological form runs `maple extract` in a subprocess under RLIMIT_AS; its time is the CPU
time it used (its own and its bash -n children's), which a machine shared by many jobs does not
inflate as it does wall time; a hang still fails at the wall limit. bash's own arithmetic and
pattern removal are the reference for the fast replacements."""

import fnmatch
import resource
import subprocess
import sys

import pytest

from maple_ci.extract import extract_script
from maple_ci.extract.budget import matches, trim
from maple_ci.extract.arith import arith
from maple_ci.files import MAX_SOURCE_BYTES

HEADER = "#!/bin/bash\n#SBATCH -N 1\n"
LAUNCH = "srun python train.py --lr 1\n"
MEMORY = 512 << 20


def _fan_out(levels: int, calls: int) -> str:
    functions = "".join(f"f{i}() {{ {'; '.join([f'f{i + 1}'] * calls)}; }}\n" for i in range(levels))
    return functions + f"f{levels}() {{ {LAUNCH.strip()}; }}\nf0\n"


def _fill(line: str) -> str:
    """`line` repeated up to just under the size cap."""
    return line * ((MAX_SOURCE_BYTES - 200) // len(line))


PATHOLOGICAL = {
    "power tower": "X=$((9**9**9))\n" + LAUNCH,
    "eval that evals itself": "a='eval \"$b\"'\nb='eval \"$a\"'\neval \"$a\"\n" + LAUNCH,
    "source of itself": "source ./job.sh\n" + LAUNCH,
    "function fan-out 10^6": _fan_out(6, 10),
    "a=$a$a x34": "a=x\n" + "a=$a$a\n" * 34 + LAUNCH,
    "one word of many expansions": "a=" + "x" * 4096 + "\nb=" + "$a" * 100_000 + "\n" + LAUNCH,
    "replacement that multiplies": "a=" + "x" * 100_000 + "\nb=${a//x/$a}\n" + LAUNCH,
    "pattern removal ${a%%*x*y*z}": "a=" + "xy" * 200_000 + "\nb=${a%%*x*y*z}\nc=${a##*x*y*z}\n" + LAUNCH,
    "case pattern *x*y*z": "a=" + "xy" * 200_000 + "\ncase $a in *x*y*z) echo;; esac\n" + LAUNCH,
    "16,000 blank lines": "\n" * 16_000 + LAUNCH,
    "1 MiB of newlines": _fill("\n") + LAUNCH,
    "1 MiB of blank lines with spaces": _fill(" \t \n") + LAUNCH,
    "1 MiB of commands": _fill("echo hi there\n") + LAUNCH,
    "1 MiB of assignments": _fill("a=1\n") + LAUNCH,
    "1 MiB of launch lines": _fill("srun -n 4 python train.py --lr 1\n"),
    "1 MiB arithmetic": "X=$((" + "1+" * 300_000 + "1))\n" + LAUNCH,
    "1 MiB of digits": "X=$((" + "9" * 500_000 + "))\n" + LAUNCH,
    "a file run again and again": "cat > f.sh <<'EOF'\n" + "#xxxxxxxx\n" * 90_000 + "EOF\n" + "bash f.sh\n" * 3000
                                  + LAUNCH,
    "bash -c checked 10^4 times": "g() { srun bash -c 'python train.py --lr 1'; }\n"
                                  + _fan_out(4, 10).replace(f"{{ {LAUNCH.strip()}; }}", "{ g; }"),
    "subshells 3,000 deep": "( " * 3000 + "echo hi" + " )" * 3000 + "\n" + LAUNCH,
    "groups 3,000 deep": "{ " * 3000 + "echo hi;" + " }" * 3000 + "\n" + LAUNCH,
    "defaults 3,000 deep": "X=" + "${a:-" * 3000 + "x" + "}" * 3000 + "\n" + LAUNCH,
    # passes bash -n as a string; the parser once added empty branches until memory ran out
    "eval of an if ending in elif": 'eval "if x; then a; elif"\n' + LAUNCH,
}


def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


@pytest.mark.parametrize("form", PATHOLOGICAL, ids=list(PATHOLOGICAL))
def test_every_pathological_form_ends_in_5_s_and_512_mib_or_is_refused_clearly(tmp_path, form):
    script = tmp_path / "job.sh"
    script.write_text(HEADER + PATHOLOGICAL[form])
    assert script.stat().st_size <= MAX_SOURCE_BYTES
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([sys.executable, "-m", "maple_ci", "extract", "--json", str(script)], capture_output=True,
                            text=True, timeout=120, preexec_fn=_limits, cwd=tmp_path)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    assert cpu <= 5, f"{form}: {cpu:.1f} s of CPU"
    assert result.returncode in (0, 2), result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr
    if result.returncode == 2:  # a refusal names the limit it met
        assert any(limit in result.stderr for limit in ("steps", "MiB of text", "nests")), result.stderr


@pytest.mark.parametrize("form", ["function fan-out 10^6", "a=$a$a x34", "one word of many expansions",
                                  "replacement that multiplies", "1 MiB of commands", "subshells 3,000 deep",
                                  "defaults 3,000 deep"])
def test_exhaustion_is_a_refusal_naming_the_limit(form):
    with pytest.raises(Exception) as caught:
        extract_script(HEADER + PATHOLOGICAL[form])
    assert type(caught.value).__name__ == "MapleError" and caught.value.exit_code == 2
    assert "extraction stopped" in str(caught.value)


def test_eval_and_source_count_toward_the_depth_limit(tmp_path):
    """Without the count, `eval "$a"` running itself recursed until Python's stack gave out."""
    (tmp_path / "job.sh").write_text(HEADER + "source ./job.sh\n" + LAUNCH)
    intent = extract_script((tmp_path / "job.sh").read_text(), tmp_path, "job.sh", tmp_path)
    assert intent.entrypoint == "train.py"
    intent = extract_script(HEADER + PATHOLOGICAL["eval that evals itself"])
    assert intent.entrypoint == "train.py"


def _bash(expression: str) -> int:
    out = subprocess.run(["bash", "-c", f"echo $(({expression}))"], capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.mark.parametrize("expression", ["9**9**9", "2**63", "2**64 + 5", "-7 / 2", "-7 % 3", "7 % -3",
                                        "9223372036854775807 + 1", "3 * 2**62", "1 << 70", "-1 >> 1",
                                        "(5 & 3) | 8 ^ 2", "~5", "MBS * 4 / 2"])
def test_arithmetic_is_bash_s_64_bit_wrapping_arithmetic(expression):
    value = arith(expression, {"MBS": "6"}.get)
    assert value == _bash(expression.replace("MBS", "6"))


def test_a_negative_exponent_is_unknown_as_bash_refuses_it():
    assert arith("2 ** -1", {}.get) is None


@pytest.mark.parametrize("pattern", ["*", "*x*y*z", "a*", "*.py", "?b*", "[ab]*", "[!a]?", "*/", "x", ""])
@pytest.mark.parametrize("value", ["", "a", "ab/cd.py", "xyxyz", "a/b/c/", "bbxa"])
def test_pattern_removal_and_matching_agree_with_bash(value, pattern):
    out = subprocess.run(["bash", "-c", 'v=$1; p=$2; printf "%s\\n" "${v#$p}" "${v##$p}" "${v%$p}" "${v%%$p}"',
                          "bash", value, pattern], capture_output=True, text=True, check=True).stdout
    assert [trim(value, kind, pattern) for kind in ("#", "##", "%", "%%")] == out.split("\n")[:4]
    assert matches(value, pattern) == fnmatch.fnmatchcase(value, pattern)
