"""Reading and writing files whose names come from untrusted input (a launch script, a comment, a
fork's tree, a checkout's own folders).

A launch script may name a wrapper, a config or an env file; the bot reads `scripts/<cluster>/*`
from a checkout it does not control. Every such read goes through `read_inside`: the path must
stay under the checkout root as written (no `..` out, no absolute path elsewhere, no
`/proc/self/cwd/..`), no part of it below the root may be a symlink, it must be a regular file
(not /dev/zero, a FIFO or a directory), and it is read up to a size cap, as UTF-8 text.

`maple port` writes into the output folder of a checkout that may hold planted symlinks
(`scripts/aurora -> ~/.local/bin`, `scripts/aurora/train.pbs -> ~/.bashrc`): every write goes
through `write_inside`, which follows no symlink (issue 26 item 5).
"""

import errno
import os
import secrets
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


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _into(fd: int, part: str, name: str) -> int:
    """The folder `part` inside the open folder `fd` (created when missing), opened without
    following a symlink; `fd` is closed."""
    try:
        try:
            os.mkdir(part, dir_fd=fd)
        except FileExistsError:
            pass
        return os.open(part, _FOLDER, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a symlink, or a file where a folder goes
            raise MapleError(f"refused to write {name}: {part} is a symlink or not a folder; "
                             "maple-ci writes only into real folders") from None
        raise MapleError(f"cannot write {name}: {part}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _open_folder(folder: Path, name: str) -> int:
    """The output folder, created when missing. Relative: no part of it from the working directory
    is a symlink; absolute: the folder itself is none (the folders above are the user's choice)."""
    start, parts = (Path("."), folder.parts) if not folder.is_absolute() else (folder.parent, (folder.name,))
    start.mkdir(parents=True, exist_ok=True)
    fd = os.open(start, os.O_RDONLY | os.O_DIRECTORY)
    for part in parts:
        fd = _into(fd, part, name)
    return fd


def _replace(fd: int, file: str, text: str, mode: Optional[int], name: str) -> None:
    """`file` in the open folder `fd` replaced by `text`: written to a new temporary file there
    (O_EXCL, O_NOFOLLOW) and renamed over it, so no link at that name is followed."""
    try:
        if stat.S_ISLNK(os.stat(file, dir_fd=fd, follow_symlinks=False).st_mode):
            raise MapleError(f"refused to write {name}: it is a symlink; maple-ci replaces only regular files")
    except FileNotFoundError:
        pass
    temporary = f".{file}.{secrets.token_hex(4)}.tmp"
    out = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=fd)
    try:
        with os.fdopen(out, "w", encoding="utf-8") as handle:
            handle.write(text)
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
        os.replace(temporary, file, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        os.unlink(temporary, dir_fd=fd)
        raise


def write_inside(folder: Path, relative: Path, text: str, mode: Optional[int] = None) -> None:
    """Write `text` to `relative` (a path below `folder`, no `..`) with `mode` (default: the umask's),
    creating the folders between; MapleError when any part is a symlink or not a folder."""
    name = str(Path(folder) / relative)
    parts = Path(relative).parts
    if not parts or Path(relative).is_absolute() or ".." in parts:
        raise MapleError(f"refused to write {name}: it is not a path inside {folder}")
    fd = _open_folder(Path(folder), name)
    for part in parts[:-1]:
        fd = _into(fd, part, name)
    try:
        _replace(fd, parts[-1], text, mode, name)
    finally:
        os.close(fd)


def trailing_paths(path: str, shortest: int = 1) -> list[str]:
    """`a/b/c`, `b/c`, `c` for `/x/a/b/c`: the path's trailing parts, longest first, down to `shortest`
    parts: where a file named by a site's path may lie in the checkout cloned there."""
    parts = [part for part in path.split("/") if part]
    return ["/".join(parts[start:]) for start in range(len(parts) - shortest + 1)]
