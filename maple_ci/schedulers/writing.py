"""How a scheduler unit writes directives: an option's words, a directive line, and edits of a
script's directive block (rewrite, set_option, remove_option) that touch only the lines they change.
The writing half of base.Scheduler, which supplies the reading it builds on (prefix, spec, block(),
options(), effective(), canonical()); a unit overrides format_option, capped and what it spells otherwise.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Optional

from ..errors import MapleError

if TYPE_CHECKING:  # base.py imports this module for Scheduler
    from .base import Keep, Option


class DirectiveWriting:
    def format_option(self, name: str, value: Optional[str]) -> list[str]:
        raise NotImplementedError

    def directive_line(self, words: list[str]) -> str:
        return f"{self.prefix} {shlex.join(words)}"

    def with_value(self, option: Option, value: str) -> list[str]:
        """The option's words as written, with a new value."""
        first = option.words[0]
        if len(option.words) == 2:
            return [first, value]
        if option.value is None:
            return self.format_option(option.name, value)
        return [first[: len(first) - len(option.value)] + value]

    def _line_words(self, options: list[Option], keep: Keep) -> tuple[list[str], list[Option]]:
        """The words of one directive line after keep(option) on each of its options, and the
        options keep changed."""
        words, changed = [], []
        for option in options:
            kept = keep(option)
            if kept is option:
                words += list(option.words)
            else:
                words += kept or []
                changed.append(option)
        return words, changed

    def rewrite(self, text: str, keep: Keep) -> tuple[str, list[Option]]:
        """`text` with each directive option passed through keep(option): None drops it, the option
        keeps it, a list of words replaces it. Only changed lines are rewritten; a line left
        empty goes. The options changed, in order."""
        lines = text.splitlines(keepends=True)
        changed, by_line = [], {}
        for option in self.options(text):
            by_line.setdefault(option.line, []).append(option)
        for number, options in by_line.items():
            words, touched = self._line_words(options, keep)
            changed += touched
            if touched:
                end = "\n" if lines[number - 1].endswith("\n") else ""
                lines[number - 1] = self.directive_line(words) + end if words else ""
        return "".join(lines), changed

    def _own(self, spelling: str) -> str:
        if not self.knows(spelling.strip()):
            raise MapleError(f"{spelling} is not a {self.prefix} option; this fix is for another scheduler")
        return self.canonical(spelling)

    def knows(self, spelling: str) -> bool:
        """Whether `spelling` (-t, --time, -l walltime) is written as one of this scheduler's options."""
        return len(spelling) == 2 and spelling[0] == "-" and spelling[1] in self.spec.aliases

    def set_option(self, text: str, spelling: str, value: Optional[str]) -> str:
        """`text` with the option set where the scheduler reads it (see SCHEDULERS.md)."""
        name = self._own(spelling)
        last = self.effective(self.options(text)).get(name)
        if last is None:
            return self._add_directive(text, self.format_option(name, value))
        words = self.with_value(last, value) if value else list(last.words)
        return self.rewrite(text, lambda o: words if o == last else o)[0]

    def _add_directive(self, text: str, words: list[str]) -> str:
        """`text` with a new directive line right after the last one of the block (or after the
        shebang), where the scheduler still reads it."""
        lines = text.splitlines(keepends=True)
        block = self.block(text)
        at = block[-1][0] if block else (1 if lines and lines[0].startswith("#!") else 0)
        if lines and not lines[-1].endswith("\n") and at == len(lines):
            lines[-1] += "\n"
        lines.insert(at, self.directive_line(words) + "\n")
        return "".join(lines)

    def remove_option(self, text: str, spelling: str) -> str:
        name = self._own(spelling)
        return self.rewrite(text, lambda o: None if o.name == name else o)[0]

    def capped(self, last: dict[str, Option], max_nodes: int, max_seconds: int) -> list[str]:
        """The words of the size_options (node count, walltime) from the effective options, capped."""
        raise NotImplementedError
