"""The cluster profiles' data files (templates/clusters/<name>.yaml) as read, before profiles.py
checks them against its models. Extraction needs only each cluster's names and signatures; reading
them here keeps the validation library out of every `maple extract`."""

import os
from functools import lru_cache
from pathlib import Path

import yaml

from .data_cache import load_yaml
from .errors import MapleError
from .paths import templates_dir


def profile_paths(directory: str) -> list[Path]:
    """The library's profiles, then those of each folder in MAPLE_CLUSTERS_DIR (os.pathsep-separated):
    a user's own, such as `maple cluster discover` writes."""
    folders = [Path(directory) / "clusters"] + [Path(p) for p in os.environ.get("MAPLE_CLUSTERS_DIR", "").split(os.pathsep) if p]
    return [path for folder in folders for path in sorted(folder.glob("*.yaml"))]


def files_stamp(directory: str) -> tuple:
    """What identifies the profiles' current contents (path, mtime, size of each file): a cache key
    that changes when a file does, for a long-running process (the bot) and for tests that edit one."""
    return tuple((str(path), stat.st_mtime_ns, stat.st_size) for path in profile_paths(directory) for stat in [path.stat()])


def profile_files(directory: str) -> dict[Path, dict]:
    """Each profile's data by file, in file order."""
    return _read(directory, files_stamp(directory))


@lru_cache(maxsize=4)
def _read(directory: str, stamp: tuple) -> dict[Path, dict]:
    files = {}
    for path_text, _, _ in stamp:
        path = Path(path_text)
        try:
            files[path] = load_yaml(path)
        except (OSError, yaml.YAMLError) as exc:  # a broken data file must name itself
            raise MapleError(f"invalid cluster profile {path}: {exc}") from exc
    return files


def cluster_data() -> dict[str, dict]:
    """Each profile's data by cluster name, unchecked: only for reading names and signatures."""
    files = profile_files(str(templates_dir())).values()
    return {data["name"]: data for data in files if isinstance(data, dict) and "name" in data}
