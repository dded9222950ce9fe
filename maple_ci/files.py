"""Reading files whose names come from untrusted input (a launch script, a comment, a fork's tree).

A launch script may name a wrapper, a config or an env file; the bot reads `scripts/<cluster>/*`
from a checkout it does not control. Every such read goes through `read_inside`: the path must
stay under the checkout root as written (no `..` out, no absolute path elsewhere, no
`/proc/self/cwd/..`), no part of it below the root may be a symlink, it must be a regular file
(not /dev/zero, a FIFO or a directory), and it is read up to a size cap, as UTF-8 text.
"""

import os
import stat
from pathlib import Path
from typing import Optional

from .errors import MapleError

MAX_SOURCE_BYTES = 1 << 20  # 1 MiB: far above any launch script or config, small enough to parse quickly


def checkout_root(path: Path) -> Path:
    """The repository a file belongs to: the nearest folder above it holding .git; else its folder."""
    folder = Path(os.path.abspath(path)).parent
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def inside(root: Path, path: Path) -> Optional[Path]:
    """`path` (relative paths are taken from `root`) as an absolute path under `root`, or None
    when it leaves the root or passes through a symlink below it. Nothing is read."""
    root = Path(os.path.abspath(root))
    full = Path(os.path.normpath(root / path))  # lexical: `..` is folded before anything is looked up
    try:
        relative = full.relative_to(root)
    except ValueError:
        return None
    if not relative.parts:
        return None
    current = root
    for part in relative.parts:
        current = current / part
        if current.is_symlink():
            return None
    return full


def read_inside(root: Path, path: Path | str, name: Optional[str] = None,
                limit: int = MAX_SOURCE_BYTES) -> str:
    """The text of `path`, which must lie inside `root` (see the module docstring); MapleError
    otherwise. `name` is how messages call it (a repo-relative path in the bot)."""
    name = name or str(path)
    full = inside(root, Path(path))
    if full is None:
        raise MapleError(f"{name} is outside the repository or reached through a symlink; "
                         "maple-ci reads only regular files inside the checkout")
    return read_text(full, name, limit, follow=False)


def read_text(path: Path, name: str, limit: int = MAX_SOURCE_BYTES, follow: bool = True) -> str:
    """A regular file's UTF-8 text, refused with a clear error when it is a directory, a device or
    a FIFO, larger than `limit`, binary or not UTF-8. `follow=False` refuses a symlink."""
    fd = _open_regular(path, name, follow)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    return _decoded(data, name, limit)


def _open_regular(path: Path, name: str, follow: bool) -> int:
    """A descriptor of the file, refused unless it is a regular file (and, without follow, no symlink)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)  # NONBLOCK: a FIFO must not hang
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow and os.path.islink(path):
            raise MapleError(f"{name} is a symlink; maple-ci reads only regular files") from None
        raise MapleError(f"cannot read {name}: {exc.strerror or exc}") from exc
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        return fd
    os.close(fd)
    if stat.S_ISDIR(mode):
        raise MapleError(f"{name} is a directory; give the launch script file inside it, or the request text")
    raise MapleError(f"{name} is not a regular file (a device, FIFO or socket); give a text file")


def _decoded(data: bytes, name: str, limit: int) -> str:
    """The bytes as text, refused when over `limit`, binary or not UTF-8."""
    if len(data) > limit:
        raise MapleError(f"{name} is larger than the {limit // 1024} KiB limit; give the launch script itself")
    if b"\0" in data:
        raise MapleError(f"{name} looks binary (it contains NUL bytes); give a text launch script")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MapleError(f"{name} is not UTF-8 text (bad byte at offset {exc.start}); save it as UTF-8") from exc
