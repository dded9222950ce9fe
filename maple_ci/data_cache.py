"""maple-ci's own data files (cluster profiles, the launcher grammar, the values table) read once:
each file's parsed form is kept under the cache directory, keyed by a hash of its content, so a
later command reads it back instead of parsing YAML again. An edited file has a new key; nothing
is ever stale. Only for maple's bundled data (or a library the user points MAPLE_TEMPLATES_DIR
at), never for a checkout's files.

marshal, not pickle: it holds plain data only (dicts, lists, strings, numbers) and runs no code
when read; a file whose data it cannot hold (a YAML date) is parsed each time instead.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from pathlib import Path

import yaml

# libyaml's safe loader where PyYAML has it: the pure-Python one took 0.17 s for 27 files, libyaml 0.02 s.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_VERSION = b"1"  # part of the key: a change to what is cached gets new entries


def _cache_dir() -> Path | None:
    from .paths import data_dir

    try:
        path = data_dir() / "parsed"
        path.mkdir(exist_ok=True)
        return path
    except OSError:  # a read-only home: parse every time
        return None


def _read_cached(entry: Path):
    try:
        return True, marshal.loads(entry.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return False, None


def _write_cached(entry: Path, data) -> None:
    try:
        blob = marshal.dumps(data)
    except ValueError:  # a value marshal cannot hold: not cached
        return
    partial = entry.with_suffix(f".{os.getpid()}.tmp")
    try:
        partial.write_bytes(blob)
        os.replace(partial, entry)  # whole or absent, for concurrent commands
    except OSError:
        partial.unlink(missing_ok=True)


def load_yaml(path: Path):
    """The data of a YAML file (yaml.YAMLError, OSError as yaml raises them)."""
    raw = Path(path).read_bytes()
    folder = _cache_dir()
    entry = folder / f"{hashlib.blake2b(_VERSION + raw, digest_size=20).hexdigest()}.marshal" if folder else None
    if entry is not None and entry.exists():
        found, data = _read_cached(entry)
        if found:
            return data
    data = yaml.load(raw.decode("utf-8"), Loader=_LOADER)
    if entry is not None:
        _write_cached(entry, data)
    return data
