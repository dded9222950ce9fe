"""A job on the local Slurm test cluster (tests/cluster/), for tests that check the trace's emulation
against what real sbatch and srun do."""

import subprocess
from pathlib import Path


def run_job(tmp_path: Path, text: str, program: str, cluster) -> str:
    """Submit `text` as job.sh beside `program` (show.py), wait for it, and return its output."""
    (tmp_path / "show.py").write_text(program)
    (tmp_path / "job.sh").write_text(text)
    out = tmp_path / "out.txt"
    done = subprocess.run(["sbatch", "--wait", "-o", str(out), "--chdir", str(tmp_path), str(tmp_path / "job.sh")],
                          capture_output=True, text=True, timeout=180, env=cluster.job_env)
    assert done.returncode == 0, done.stderr + (out.read_text() if out.exists() else "")
    return out.read_text()
