"""The gate's traces of one command (the source and each port) share one copy of the checkout and run
side by side (maple_ci/trace/__init__.py, trace_with_ports; sandbox.py, SharedCopy). What must hold:
the checkout is copied once per command however many targets, no trace sees what another wrote, and
the traces say what they say when run one after another. Real bash and bubblewrap; the scripts are
small ones written here. Bubblewrap is part of the test set-up (tests/cluster/setup.sh installs it):
without it these fail rather than skip, as the other trace tests do.
"""

from pathlib import Path

from maple_ci.errors import MapleError
from maple_ci.trace import sandbox, trace_script, trace_with_ports

# Each side writes a file named after itself into its folder, then hands the program what it finds
# there: a trace that saw another's file would pass it on.
WRITES = ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\n#SBATCH --gpus-per-node=2\n"
          "echo x > written-by-{who}\nsrun python3 tool/run.py --found \"$(ls written-by-* | tr '\\n' ,)\"\n")


def checkout(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "tool").mkdir()
    (tmp_path / "tool" / "run.py").write_text("print('never run by the trace')\n")
    path = tmp_path / "launch.sh"
    path.write_text(WRITES.format(who="source"))
    return path


def test_one_copy_of_the_checkout_for_the_source_and_every_port(tmp_path, monkeypatch):
    path = checkout(tmp_path)
    copies = []
    real_copy = sandbox.copy_checkout
    monkeypatch.setattr(sandbox, "copy_checkout", lambda src, dst: (copies.append(src), real_copy(src, dst)))
    ports = [(None, WRITES.format(who=f"port{n}")) for n in range(4)]
    source, traced = trace_with_ports(path, ports, trusted=True)
    assert copies == [tmp_path.resolve()]
    assert len(traced) == 4 and all(not isinstance(t, MapleError) for t in traced)


def test_no_trace_sees_what_another_wrote(tmp_path):
    path = checkout(tmp_path)
    ports = [(None, WRITES.format(who=f"port{n}")) for n in range(3)]
    source, traced = trace_with_ports(path, ports, trusted=True)
    assert {tuple(r.argv) for r in source.ranks} == {("python3", "tool/run.py", "--found", "written-by-source,")}
    for n, port in enumerate(traced):
        assert {tuple(r.argv) for r in port.ranks} == {("python3", "tool/run.py", "--found", f"written-by-port{n},")}
    assert sorted(p.name for p in tmp_path.iterdir()) == [".git", "launch.sh", "tool"]  # the checkout as it was


def test_side_by_side_gives_what_one_after_another_gives(tmp_path):
    path = checkout(tmp_path)
    port = WRITES.format(who="port").replace("#SBATCH -N 2", "#SBATCH -N 1")
    source, (traced,) = trace_with_ports(path, [("perlmutter", port)], trusted=True)
    alone_source = trace_script(path, trusted=True)
    alone_port = trace_script(path, cluster="perlmutter", nodes=len(alone_source.allocation.nodes), text=port, trusted=True)
    assert source.ranks and traced.ranks
    for together, alone in ((source, alone_source), (traced, alone_port)):
        assert [(r.rank, r.node, r.argv, r.env) for r in together.ranks] == \
            [(r.rank, r.node, r.argv, r.env) for r in alone.ranks]


def test_a_source_that_cannot_be_traced_says_so_for_every_port(tmp_path):
    missing = tmp_path / "gone.sh"
    source, traced = trace_with_ports(missing, [(None, "#!/bin/bash\n"), (None, "#!/bin/bash\n")], trusted=True)
    assert isinstance(source, MapleError) and "no such script" in str(source)
    assert len(traced) == 2 and all(isinstance(t, MapleError) for t in traced)


def test_a_checkout_too_large_is_refused_once_for_all_traces(tmp_path, monkeypatch):
    path = checkout(tmp_path)
    monkeypatch.setattr(sandbox, "MAX_COPY_FILES", 1)
    copies = []
    real_copy = sandbox.copy_checkout
    monkeypatch.setattr(sandbox, "copy_checkout", lambda src, dst: (copies.append(src), real_copy(src, dst)))
    source, traced = trace_with_ports(path, [(None, WRITES.format(who="port"))] * 3, trusted=True)
    assert isinstance(source, MapleError) and "too large" in str(source)
    assert all(isinstance(t, MapleError) and "too large" in str(t) for t in traced)
    assert len(copies) == 1


def test_a_port_to_several_clusters_traces_the_source_once(tmp_path, monkeypatch):
    import maple_ci.trace as trace
    from maple_ci.port import port

    (tmp_path / ".git").mkdir()
    (tmp_path / "fit.py").write_text("pass\n")
    source = tmp_path / "job.sh"
    source.write_text("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=4\n#SBATCH --time=00:30:00\n"
                      "srun --ntasks-per-node=1 torchrun --nnodes=2 --nproc_per_node=4 fit.py --steps 10\n")
    calls = []
    real = trace.trace_script
    monkeypatch.setattr(trace, "trace_script", lambda path, **kw: (calls.append(kw.get("text")), real(path, **kw))[1])
    _, results = port(str(source), ["perlmutter", "polaris", "frontier"], tmp_path / "out", trace=True)
    assert [text for text in calls if text is None] == [None]  # the source, once
    assert len(calls) >= 3  # and the ports
    assert len(calls) == 1 + sum(r.status == "ok" or any(c.name == "trace" for c in r.checks) for r in results)
    assert all(any(c.name == "trace" for c in r.checks) for r in results if r.status == "ok")
