"""`maple port SCRIPT --to CLUSTER --trace` as a user runs it, for tests that check the trace gate's verdict."""

import json
import subprocess
import sys
from pathlib import Path


def traced_port(script: Path, cluster: str) -> tuple[int, list, Path]:
    """(exit status, the port's "trace" checks, the folder of the port) of porting `script`."""
    out = script.parent / "out"
    done = subprocess.run([sys.executable, "-m", "maple_ci", "port", str(script), "--to", cluster, "--json", "--trace",
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    checks = json.loads(done.stdout)["results"][0]["checks"]
    return done.returncode, [check for check in checks if check["name"] == "trace"], out / cluster
