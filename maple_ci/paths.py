"""Where maple-ci finds its data (templates, mini-apps) and keeps its caches."""

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def bundled(name: str) -> Path:
    # A wheel carries the folder inside the package; a source checkout has it at the top.
    inside = _PACKAGE / name
    return inside if inside.is_dir() else _PACKAGE.parent / name


def templates_dir() -> Path:
    return Path(os.environ["MAPLE_TEMPLATES_DIR"]) if os.environ.get("MAPLE_TEMPLATES_DIR") else bundled("templates")


def miniapps_dir() -> Path:
    return bundled("miniapps")


def data_dir() -> Path:
    """Caches (LanceDB tables). MAPLE_DATA_DIR wins, then XDG_CACHE_HOME, then ~/.cache."""
    if os.environ.get("MAPLE_DATA_DIR"):
        path = Path(os.environ["MAPLE_DATA_DIR"])
    else:
        path = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "maple-ci"
    path.mkdir(parents=True, exist_ok=True)
    return path
