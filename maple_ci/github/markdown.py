"""Untrusted text (file names, arguments, values extracted from a fork's script) made inert for
GitHub Markdown, which renders PR bodies, comments and check-run summaries, and for the Actions
log, which obeys any line starting with `::`.
"""

from __future__ import annotations

import re

# A zero-width space after `@`, `://` and `www` breaks GitHub's mention and autolink detection
# while the text still reads the same (Renovate does the same with mentions).
_ZWSP = "\u200b"
# Every character CommonMark lets a backslash escape that can start markup (emphasis, links,
# images, headings, tables, code spans, strike-through); `<` `>` `&` become entities instead.
_MARKUP = re.compile(r"([\\`*_{}\[\]()#+!|~])")


def plain(text: str) -> str:
    """`text` shown as written: no mention, link, image, HTML, heading or code span; one line."""
    text = " ".join(str(text).splitlines())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MARKUP.sub(r"\\\1", text)
    return _defuse(text)


def code(text: str) -> str:
    """`text` as one inline code span (GitHub renders nothing inside one), on one line; the fence
    is longer than any backtick run inside, padded when the text starts or ends with a backtick."""
    text = " ".join(str(text).splitlines()) or " "
    fence = "`" * (longest_backticks(text) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def block_fence(text: str) -> str:
    """The fence of a fenced block that holds `text`: longer than any backtick run in it, or the
    block would end early."""
    return "`" * max(3, longest_backticks(text) + 1)


def longest_backticks(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def cell(markdown: str) -> str:
    """Markdown that cannot break a table row: GFM splits cells at `|`, even inside code spans."""
    return markdown.replace("\r", " ").replace("\n", " ").replace("|", "\\|")


def _defuse(text: str) -> str:
    text = text.replace("@", "@" + _ZWSP)
    # "https:<zwsp>//x" and "www<zwsp>.x" are no scheme and no host: GFM's autolinks need both.
    return text.replace("://", ":" + _ZWSP + "//").replace("www.", "www" + _ZWSP + ".")


def log_safe(text: str) -> str:
    """One log line that the runner cannot read as a workflow command: CR and LF (and `%`, which
    escapes them) written as GitHub's workflow-command escapes, so no line of it starts with `::`."""
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
