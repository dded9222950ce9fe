"""The cluster profiles' data files (templates/clusters/<name>.yaml) as read, before profiles.py
checks them against its models. Extraction needs only each cluster's names and signatures; reading
them here keeps the validation library out of every `maple extract`."""

from functools import lru_cache
from pathlib import Path

import yaml

from .data_cache import load_yaml
from .errors import MapleError
from .paths import templates_dir


def files_stamp(directory: str) -> tuple:
    """What identifies the profiles' current contents (name, mtime, size of each file): a cache key
    that changes when a file does, for a long-running process (the bot) and for tests that edit one."""
    paths = sorted((Path(directory) / "clusters").glob("*.yaml"))
    return tuple((path.name, stat.st_mtime_ns, stat.st_size) for path in paths for stat in [path.stat()])


def profile_files(directory: str) -> dict[Path, dict]:
    """Each profile's data by file, in file order."""
    return _read(directory, files_stamp(directory))


@lru_cache(maxsize=4)
def _read(directory: str, stamp: tuple) -> dict[Path, dict]:
    files = {}
    for name, _, _ in stamp:
        path = Path(directory) / "clusters" / name
        try:
            files[path] = load_yaml(path)
        except (OSError, yaml.YAMLError) as exc:  # a broken data file must name itself
            raise MapleError(f"invalid cluster profile {path}: {exc}") from exc
    return files


def cluster_data() -> dict[str, dict]:
    """Each profile's data by cluster name, unchecked: only for reading names and signatures."""
    files = profile_files(str(templates_dir())).values()
    return {data["name"]: data for data in files if isinstance(data, dict) and "name" in data}
