"""A venv inside the test run, as tests that start maple-ci from a center's or a user's venv need,
and as the user's environment (--python-env) that a port activates on the local test cluster.

A link to this interpreter is not one: started through a link outside its own venv, Python finds no
pyvenv.cfg and runs as the base interpreter, without the packages of the venv the tests run in
(`make test` inside an activated virtualenv). A real venv that adds this interpreter's
site-packages (with their .pth files: an editable maple-ci is one) sees what this one sees; one made
with --system-site-packages would not when this interpreter is itself a venv's: it sees the base
interpreter's packages (a system Python without torch), not the venv's."""

import site
import subprocess
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]


def nested_venv(path: Path) -> Path:
    """A venv at `path` that imports what this interpreter imports; its bin folder."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    [site_packages] = path.glob("lib/python*/site-packages")
    dirs = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    (site_packages / "outer.pth").write_text("import site; " + "; ".join(f"site.addsitedir({d!r})" for d in dirs) + "\n")
    # The maple-ci these tests come from first, whichever checkout an editable install points at.
    (site_packages / "zz-checkout.pth").write_text(f"import sys; sys.path.insert(0, {str(CHECKOUT)!r})\n")
    return path / "bin"
