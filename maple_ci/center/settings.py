"""The center's own settings for the gate: a TOML file on the runner that only root can change
(default /etc/maple-ci/center.toml, named on the gate's command line in the center's copy of the
CI file), never CI/CD variables. A trigger that may still set pipeline variables overrides a
project's variables (GitLab's precedence), so settings read from the environment would let the
request that is being checked widen its own checks; a file only root can write cannot be.
workflows/gitlab/README.md lists the keys."""

import tomllib
from dataclasses import dataclass
from pathlib import Path

from maple_ci.center.checkout import Refused, root_only

DEFAULT_PATH = Path("/etc/maple-ci/center.toml")
MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class Settings:
    clusters: tuple[str, ...]  # the runner tags this center verifies on
    max_nodes: int = 2
    max_minutes: int = 30
    site_scheduler_options: str = ""  # e.g. "--account=m1234 --qos=debug"
    protected_refs: tuple[str, ...] = ()  # branches besides the default branch that may be verified
    fetch_wait_seconds: float = 180.0
    site_variables: tuple[str, ...] = ()  # names the site's own login or batch environment sets
    bot_keys: tuple[str, ...] = ()  # the bot's Ed25519 public keys (maple_ci/attestation.py)


# key -> (the type TOML gives it, how it becomes the field)
_KEYS = {"clusters": (list, tuple), "max_nodes": (int, int), "max_minutes": (int, int),
         "site_scheduler_options": (str, str), "protected_refs": (list, tuple),
         "fetch_wait_seconds": ((int, float), float), "site_variables": (list, tuple), "bot_keys": (list, tuple)}


def load_settings(path: Path) -> Settings:
    """The settings in `path`; Refused when the file is not root's alone, not TOML, or holds a key
    or a value the gate does not know (a typo must not silently fall back to a default)."""
    if not root_only(path) or not path.is_file():
        raise Refused(f"the center's settings {path} are not a file that only root can change "
                      "(root owns it and every directory above it; workflows/gitlab/README.md)")
    if path.stat().st_size > MAX_BYTES:
        raise Refused(f"the center's settings {path} are larger than {MAX_BYTES} bytes")
    try:
        raw = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise Refused(f"the center's settings {path} are not TOML: {exc}") from exc
    if "clusters" not in raw:
        raise Refused(f"the center's settings {path} do not name its clusters (clusters = [...], its runner tags)")
    return Settings(**{key: _value(path, key, value) for key, value in raw.items()})


def _value(path: Path, key: str, value):
    if key not in _KEYS:
        raise Refused(f"the center's settings {path} have an unknown key {key!r} (known: {', '.join(_KEYS)})")
    kind, convert = _KEYS[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        raise Refused(f"the center's settings {path}: {key} must be a {convert.__name__}, not {value!r}")
    if convert is tuple and not all(isinstance(item, str) for item in value):
        raise Refused(f"the center's settings {path}: {key} must be a list of strings")
    return convert(value)
