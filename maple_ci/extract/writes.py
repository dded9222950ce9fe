"""Files a script writes as it runs, as the walk (walk.py's Shell) reads them: a here-document
(`cat > run.sh <<EOF`, `cat >> run.sh <<EOF`, `tee f <<EOF`) or the lines `echo`/`printf` write
(`echo "#SBATCH --nodes=2" >> job.slurm`), kept as text for a later `sbatch job.slurm` or
`bash run.sh`; and the input a command gets (`sbatch <<EOF`, `cat <<EOF | sbatch`, `bsub < job.sh`).

`>` truncates the file and `>>` appends to it, as bash's manual ("Redirecting Output", "Appending
Redirected Output") has them. A written file is capped at the size maple reads a script at.
"""

from __future__ import annotations

import re
from typing import Optional

from ..files import MAX_SOURCE_BYTES
from .shell import Command

_OUTPUT = (">", ">>", ">|")
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "a": "\a", "r": "\r"}


class Writes:
    """The writing commands the walk follows, as methods of its Shell."""

    def _here_document(self, cmd: Command) -> None:
        """`cat > run.sh <<EOF`: the file's text, for a later `bash run.sh`; `read -r -d '' CMD <<EOF`: the
        variable's value, for `bash -c "$CMD"`; else the command's input (`sbatch <<EOF`, `cat <<EOF | sbatch`,
        `bash < setup.sh`)."""
        piped, self.piped = self.piped, None
        text = self._here_document_text(cmd) if cmd.heredoc is not None and cmd.words else None
        self.stdin = text if text is not None else piped if piped is not None else self._input_file(cmd)
        if text is None:
            return
        if cmd.words[0] == "read":
            self.vars[cmd.words[-1]] = text.rstrip("\n")
        elif cmd.words[0] == "cat" and cmd.piped and not _written_files(cmd):
            self.piped = text
        elif cmd.words[0] in ("cat", "tee"):
            appends = ">>" in (op for op, _ in cmd.redirects)
            for path in map(self.expand.string, _written_files(cmd)):
                self._write(path, text, appends)

    def _input_file(self, cmd: Command) -> Optional[str]:
        """The text of the checkout file a `<` redirect gives the command as its input (`bsub < job.sh`,
        `bash < setup.sh`)."""
        paths = [target for op, target in cmd.redirects if op == "<"]
        return self.read(self.expand.string(paths[-1]).removeprefix("./")) if paths else None

    def _record_writes(self, cmd: Command) -> None:
        for op, target in cmd.redirects:
            if op in _OUTPUT and not target.startswith("&"):
                self.written.setdefault(self.expand.string(target).removeprefix("./"), self.at)
        if cmd.words[:1] in (["echo"], ["printf"]) and cmd.heredoc is None:
            self._printed(cmd)

    def _printed(self, cmd: Command) -> None:
        """`echo LINE > f` / `printf FORMAT ARGS >> f`: the line written to (or added to) the file."""
        targets = [(op, target) for op, target in cmd.redirects if op in _OUTPUT and not target.startswith("&")]
        if not targets:
            return
        op, target = targets[-1]
        fields = self._fields(cmd.words)
        text = echo_output(fields[1:]) if fields[0] == "echo" else printf_output(fields[1:])
        self._write(self.expand.string(target), text, op == ">>")

    def _write(self, path: str, text: str, appends: bool) -> None:
        """`path` (and its ./-less name) now holds `text`, or its text and then `text`."""
        before = self.files.get(path, "") if appends else ""
        whole = (before + text)[:MAX_SOURCE_BYTES]
        self.files[path] = self.files[path.removeprefix("./")] = whole

    def _here_document_text(self, cmd: Command) -> str:
        body, expands = cmd.heredoc
        return self.expand.text(body) if expands else body


def echo_output(args: list[str]) -> str:
    """What bash's `echo [-neE] ARGS` prints: the arguments joined by spaces, a newline unless -n,
    backslash escapes read only with -e."""
    flags = ""
    while args and re.fullmatch(r"-[neE]+", args[0]):
        flags, args = flags + args[0][1:], args[1:]
    text = " ".join(args)
    if flags.rfind("e") > flags.rfind("E"):  # the last of -e/-E wins
        text = _unescaped(text)
    return text if "n" in flags else text + "\n"


def printf_output(args: list[str]) -> str:
    """What bash's `printf FORMAT ARGS` prints for the conversions a job line uses (%s, %d, %%, the
    backslash escapes; others, such as %5s, stay as written): the format is reused while arguments
    remain, as the builtin does."""
    if not args:
        return ""
    form, values = _unescaped(args[0]), args[1:]
    out, first = [], True
    while first or values:
        first = False
        used = sum(1 for _ in re.finditer(r"%[sd]", form))
        given = values[:used] + [""] * (used - len(values[:used]))
        values = values[used:] if used else []
        parts = iter(given)
        out.append(re.sub(r"%%|%[sd]", lambda m: "%" if m.group() == "%%" else next(parts), form))
    return "".join(out)


def _unescaped(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), text)


def _written_files(cmd: Command) -> list[str]:
    """Where `cat > f <<EOF`, `cat >> f`, `tee f <<EOF` write the here-document, as written."""
    targets = [target for op, target in cmd.redirects if op in _OUTPUT] + cmd.words[1:2]
    return [target for target in targets if not target.startswith("-")]
