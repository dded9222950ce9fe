"""A port's record (issue 25 H): the read-back gate's inputs live in the port's own header, not in a
NAME.maple.json beside it holding the whole source; an old file is still read; a block that
maple port did not write is refused with a message that names the problem. Real extraction,
retrieval, templates and gate throughout."""

import json
import subprocess
import re
import time
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from maple_ci.cli import main
from maple_ci.errors import MapleError
from maple_ci.extract import extract_script
from maple_ci.intent import without_record
from maple_ci.port import port, port_intent
from maple_ci.verify.record import (LEGACY_SUFFIX, MAX_BLOCK_BYTES, PREFIX, block, gate_failures, load_record,
                                    make_record, parse_block)

# Everything a record can carry: a container, the launcher's options, variables, modules, an
# account, non-ASCII and quote characters in an argument.
RICH = """#!/bin/bash
#SBATCH -N 2
#SBATCH --gpus-per-node=4
#SBATCH -t 02:00:00
#SBATCH -A proj123
module load cuda/12.2
export NCCL_DEBUG=INFO
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
srun --ntasks-per-node=1 apptainer exec --nv -B /data:/data img.sif \\
    torchrun --nnodes 2 --nproc_per_node 4 --max_restarts 3 --rdzv_backend c10d --rdzv_endpoint "$MASTER_ADDR:29500" \\
    train.py --lr 3e-4 --name "run é \\"q\\""
"""


@pytest.fixture(autouse=True)
def data_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path_factory.getbasetemp() / "maple-data"))


@pytest.fixture(scope="module")
def ported(tmp_path_factory):
    """RICH ported to Perlmutter by `maple port`'s own path (port: read, extract, port, write)."""
    repo = tmp_path_factory.mktemp("repo")
    (repo / "train.sh").write_text(RICH)
    _, [result] = port(str(repo / "train.sh"), ["perlmutter"], repo / "scripts")
    return Path(result.path), result


def _with_block_lines(script: str, lines: list[str]) -> str:
    """`script` with its record block replaced by `lines` (a forged block)."""
    kept = [line for line in script.splitlines() if not line.startswith(PREFIX.rstrip())]
    return "\n".join([kept[0], *lines, *kept[1:]]) + "\n"


def _block_lines(script: str) -> list[str]:
    return [line for line in script.splitlines() if line.startswith(PREFIX)]


def test_a_port_writes_no_record_file_and_its_header_holds_the_record_without_the_source(ported):
    path, result = ported
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no NAME.maple.json
    header = result.script.split("\n\n", 1)[0]
    lines = _block_lines(result.script)
    assert [line.split()[2] for line in lines] == ["version", "cluster", "template", "source", "rendezvous", "intent"]
    assert all(line in header for line in lines)  # in the header, before the script's first command
    assert "apptainer exec" not in "\n".join(lines) and "#SBATCH -A" not in "\n".join(lines)  # no source text
    assert len("".join(lines)) < 1500
    assert all(line.isascii() for line in lines)


def test_the_header_block_round_trips_and_changes_nothing_the_reader_sees(ported):
    path, result = ported
    record = parse_block(result.script)
    source_intent = extract_script(RICH)
    assert record.cluster == "perlmutter" and record.template == result.template and record.legacy is None
    assert record.rendezvous == {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}  # torchrun's contract
    # only what the gates read is recorded: the source's image and variables, which the port may not
    # carry, never come back into the script as text
    assert record.intent.container is None and record.intent.env == {} and record.intent.script_args[-1] == 'run é "q"'
    assert record.intent.launcher_options == source_intent.launcher_options and record.intent.notes == []
    rebuilt = make_record(record.intent, record.cluster, record.template, RICH)
    assert block(rebuilt) == "".join(line + "\n" for line in _block_lines(result.script))  # same hash, same text
    assert extract_script(result.script) == extract_script(without_record(result.script))
    assert gate_failures(path.read_text(), load_record(path, path.read_text())) == []


def test_an_edited_port_fails_the_gate_from_its_header_record(ported):
    path, result = ported
    edited = result.script.replace("--lr 3e-4", "--lr 1e-3")
    [failure] = gate_failures(edited, parse_block(edited))
    assert failure.startswith("readback:arguments") and "'3e-4'" in failure and "'1e-3'" in failure


def _forged(script: str, key: str, value: str) -> str:
    lines = [line if line.split()[2] != key else f"{PREFIX}{key} {value}" for line in _block_lines(script)]
    return _with_block_lines(script, lines)


@pytest.mark.parametrize("change, message", [
    (lambda s: _with_block_lines(s, [*_block_lines(s), f"{PREFIX}exec rm -rf ~"]), "unknown key 'exec'"),
    (lambda s: _with_block_lines(s, [*_block_lines(s), _block_lines(s)[1]]), "gives cluster twice"),
    (lambda s: _with_block_lines(s, _block_lines(s)[:-1]), "lacks intent"),
    (lambda s: _forged(s, "version", "2"), "is version '2'"),
    (lambda s: _forged(s, "cluster", "../../etc"), "is not a cluster name"),
    (lambda s: _forged(s, "source", "md5:abc"), "sha256:<64 hex digits>"),
    (lambda s: _forged(s, "rendezvous", "LD_PRELOAD"), "not rendezvous variables"),
    (lambda s: _forged(s, "intent", '{"entrypoint": "train.py", "__class__": 1}'), "unknown field(s) '__class__'"),
    (lambda s: _forged(s, "intent", '{"entrypoint": "train.py", "nodes": "2"}'), "nodes has the wrong type"),
    (lambda s: _forged(s, "intent", '{"entrypoint": "train.py", "nodes": true}'), "nodes has the wrong type"),
    (lambda s: _forged(s, "intent", '{"entrypoint": "train.py", "script_args": [1]}'), "script_args has the wrong type"),
    (lambda s: _forged(s, "intent", '{"entrypoint": "x", "container": {"runtime": "docker", "cmd": "sh"}}'),
     "container has unknown field(s) 'cmd'"),
    (lambda s: _forged(s, "intent", '{"entrypoint": "train.py", "nodes": 0}'), "nodes must be a whole number"),
    (lambda s: _forged(s, "intent", '{"entrypoint": "train.py", "framework": "__import__"}'), "unknown framework"),
    (lambda s: _forged(s, "intent", '__import__("os").system("id")'), "intent is not valid JSON"),
    (lambda s: _forged(s, "intent", "[" * 5000 + "]" * 5000), "intent is not valid JSON"),
    (lambda s: _forged(s, "intent", json.dumps({"entrypoint": "t.py", "script_args": ["x" * MAX_BLOCK_BYTES]})),
     "too large"),
    (lambda s: _with_block_lines(s, [*_block_lines(s), *[f"{PREFIX}#"] * 20]), "too large"),
])
def test_a_forged_or_oversized_block_is_refused_with_a_clear_message_in_bounded_time(ported, change, message):
    path, result = ported
    started = time.monotonic()
    with pytest.raises(MapleError, match=re.escape(message)):
        load_record(path, change(result.script))
    assert time.monotonic() - started < 2


def test_maple_verify_refuses_a_forged_block_before_any_job(ported, capsys, monkeypatch):
    path, result = ported
    forged = path.with_name("forged.sbatch")
    forged.write_text(_forged(result.script, "intent", '{"entrypoint": "train.py", "nodes": "2"}'))
    monkeypatch.setattr("sys.argv", ["maple", "verify", str(forged), "--backend", "slurm"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    err = " ".join(capsys.readouterr().err.split())
    assert exit_info.value.code == 2 and "maple-record block's intent: nodes has the wrong type" in err


def _legacy_port(tmp_path: Path, source: str) -> Path:
    """A port as maple port wrote it up to 2026-11-29: no block, NAME.maple.json beside it with the
    source's intent, the target, the template and the source's text."""
    intent = extract_script(source)
    result = port_intent(intent, ["polaris"], "job.sh", tmp_path, source_text=source)[0]
    path = tmp_path / "job.pbs"
    path.write_text(without_record(result.script))
    old = {"intent": asdict(replace(intent, notes=["kept in old files"])), "cluster": "polaris",
           "template": result.template, "source_text": source}
    Path(str(path) + LEGACY_SUFFIX).write_text(json.dumps(old, indent=1))
    return path


SOURCE = """#!/bin/bash
#SBATCH -N 2
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-node=4
#SBATCH -t 01:00:00
export MASTER_ADDR=$(hostname)
export MASTER_PORT=29500
srun python train.py --epochs 10
"""


def test_an_old_record_file_beside_a_port_is_still_read_and_named(tmp_path, capsys, monkeypatch):
    path = _legacy_port(tmp_path, SOURCE)
    record = load_record(path, path.read_text())
    assert record.legacy == Path(str(path) + LEGACY_SUFFIX) and record.rendezvous == {"MASTER_ADDR", "MASTER_PORT"}
    assert gate_failures(path.read_text(), record) == []
    path.write_text(path.read_text().replace("export MASTER_PORT=29500", "true"))
    [failure] = gate_failures(path.read_text(), record)
    assert failure.startswith("readback:environment") and "MASTER_PORT" in failure
    monkeypatch.setattr("sys.argv", ["maple", "verify", str(path), "--backend", "local"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    err = " ".join(capsys.readouterr().err.split())
    assert exit_info.value.code == 1 and "the old file beside the port" in err and "readback:environment" in err


def test_an_old_record_file_is_read_as_strictly_as_a_block(tmp_path):
    path = _legacy_port(tmp_path, SOURCE)
    recorded = Path(str(path) + LEGACY_SUFFIX)
    data = json.loads(recorded.read_text())
    recorded.write_text(json.dumps({**data, "command": "id"}))
    with pytest.raises(MapleError, match="is not a maple record"):
        load_record(path, path.read_text())
    recorded.write_text(json.dumps({**data, "intent": {**data["intent"], "world_size": "8"}}))
    with pytest.raises(MapleError, match="world_size has the wrong type"):
        load_record(path, path.read_text())
    recorded.unlink()
    recorded.symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text(json.dumps(data))
    with pytest.raises(MapleError):
        load_record(path, path.read_text())


def test_on_every_cluster_the_block_ends_the_header_before_any_command(tmp_path):
    """Every scheduler's template: the block comes after the directives and before the first command
    (a directive after a command is ignored by Slurm and PBS), and bash still parses the script."""
    from maple_ci.profiles import load_profiles

    results = port_intent(extract_script(SOURCE), sorted(load_profiles()), "job.sh", tmp_path, source_text=SOURCE)
    for result in (r for r in results if r.script):
        lines = result.script.splitlines()
        last = max(i for i, line in enumerate(lines) if line.startswith(PREFIX))
        assert all(line.startswith("#") for line in lines[:last + 1]), result.cluster
        assert lines[last + 1] == "" and parse_block(result.script).cluster == result.cluster
        assert subprocess.run(["bash", "-n"], input=result.script, text=True).returncode == 0, result.cluster
    assert len([r for r in results if r.script]) >= 20


def test_the_record_names_no_difference_for_the_trace_gate(ported):
    """The trace gate takes a difference for said when the header's notes hold its key words; the
    record lists the source's variables and arguments, which must not count as saying anything."""
    from maple_ci.trace.compare import Difference, header_of

    _, result = ported
    unsaid = Difference("program", "rank 0 runs train.py --lr 3e-4 in the source", ("--lr",))
    assert '"--lr"' in "\n".join(_block_lines(result.script))
    assert not unsaid.named_in(header_of(result.script))
    assert header_of(result.script).startswith("# Generated by maple-ci") and "#SBATCH" in header_of(result.script)
