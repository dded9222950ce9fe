"""Retrieval beyond the knowledge base, as Maple does: the centers' troubleshooting and known-issues
pages shipped with the package (templates/errors/docs/*.yaml, searched with the same embeddings and
LanceDB as the known errors), and, only when asked (--online), GitHub's issue search for the error's
key line in the frameworks' and centers' repositories (templates/search_repos.yaml), each thread
shown as its link only: its text, and which comment people reacted to, are anyone's to write. A
thread closed as completed is linked with the answer that closed it: the last comment its
repository's maintainers (owner, member, collaborator: GitHub's author_association, which only the
repository grants) wrote before it was closed, again as a link only.
"""

import hashlib
import re
import time
from functools import lru_cache
from typing import Literal, Mapping, Optional

import requests
import yaml
from pydantic import BaseModel, ConfigDict, Field

from ..errors import MapleError
from ..paths import bundled, templates_dir
from .logs import Failure

DOCS_LIMIT = 3
MAX_DOCS_DISTANCE = 0.42  # cosine distance past which a passage is about something else (measured: unrelated ones >= 0.45)
GITHUB_LIMIT = 3
TIMEOUT = (5, 20)  # seconds: connect, read
BUDGET = 30.0  # seconds for the whole search: answers not looked up by then are left out
SUMMARY_CHARS = 300
QUERY_CHARS = 256  # GitHub's search query limit (templates/search_repos.yaml)


class Reference(BaseModel):
    source: Literal["docs", "github"]
    title: str
    url: str
    summary: str  # the passage shortened; for a GitHub thread, what the link is (never its text)
    score: float  # 1 - cosine distance for docs; GitHub's rank order otherwise (1.0 first)
    closed_by: Optional[str] = None  # a closed thread's closing answer: the maintainers' comment, as its link


class DocPassage(BaseModel):
    """One known issue from a center's page, written down by reading it (read_on is the date)."""

    model_config = ConfigDict(extra="forbid")
    center: str
    title: str
    url: str = Field(pattern=r"^https://")
    read_on: str
    text: str = Field(min_length=20)


def _docs_files() -> list:
    return sorted((templates_dir() / "errors" / "docs").glob("*.yaml"))


@lru_cache(maxsize=2)
def _passages(content_hash: str) -> tuple[DocPassage, ...]:
    passages = []
    for path in _docs_files():
        try:
            passages += [DocPassage.model_validate(item) for item in yaml.safe_load(path.read_text()) or []]
        except Exception as exc:  # a broken data file must name itself
            raise MapleError(f"invalid documentation index {path}: {exc}") from exc
    return tuple(passages)


def docs_hash() -> str:
    digest = hashlib.sha256()
    for path in _docs_files():
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def load_passages() -> tuple[DocPassage, ...]:
    return _passages(docs_hash())


def passage_text(p: DocPassage) -> str:
    """What is embedded for a passage (precompute ships these vectors)."""
    return f"{p.title}\n{p.text}"


def search_docs(failure: Failure, limit: int = DOCS_LIMIT) -> list[Reference]:
    """The centers' pages nearest to the failure's error lines, best first, close ones only."""
    from ..vectordb import search

    passages = load_passages()
    if not passages:
        return []

    def rows() -> list[dict]:
        return [{"id": i, "text": passage_text(p)} for i, p in enumerate(passages)]

    found = search("docs", docs_hash(), rows, failure.signature, ["id"], limit=limit)
    return [
        Reference(source="docs", title=f"{passages[r['id']].center}: {passages[r['id']].title}", url=passages[r["id"]].url,
                  summary=_short(passages[r["id"]].text), score=round(1.0 - r["_distance"], 4))
        for r in found if r["_distance"] <= MAX_DOCS_DISTANCE
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# GitHub issue search (https://docs.github.com/en/rest/search/search#search-issues-and-pull-requests)

# Parts of an error line that differ between runs and would only narrow the search to nothing.
_VOLATILE = re.compile(r"0x[0-9a-fA-F]+|\b\d[\d.:-]*\b|/\S+|\[[^\]]*\]|\S+@\S+|\b(?:nid|x\d{4})\S*")
_WORD = re.compile(r"[A-Za-z_][\w.-]+")
# An issue's address as a GitHub server writes it; the repository is checked against the list.
_ISSUE_URL = re.compile(r"https://[\w.-]+(?::\d+)?/(?P<repo>[\w.-]+/[\w.-]+)/issues/(?P<number>\d+)")


def key_line(failure: Failure) -> str:
    """The error's words that carry over between runs: no numbers, paths, hosts or brackets."""
    line = failure.exception or failure.line
    words = _WORD.findall(_VOLATILE.sub(" ", line))
    return " ".join(words[:12])


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1].rsplit(" ", 1)[0] + " …"


def _get(url: str, token: Optional[str], params: Optional[dict] = None, timeout=TIMEOUT):
    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        response = requests.get(url, params=params, headers=headers, timeout=timeout)
    except requests.RequestException as exc:
        raise MapleError(f"GitHub search at {url} could not be reached: {exc}") from exc
    if response.status_code != 200:
        raise MapleError(f"GitHub search at {url} answered HTTP {response.status_code}: {response.text[:200]}")
    return response.json()


def github_api(env: Mapping[str, str]) -> str:
    """GITHUB_API_URL as Actions sets it (GitHub Enterprise Server, a test server), else GitHub's
    documented REST root for a person running the CLI."""
    return env.get("GITHUB_API_URL") or "https://api.github.com"


@lru_cache(maxsize=1)
def search_repositories() -> tuple[str, ...]:
    """The repositories the search looks in, in order: always the package's list (a custom template
    library, MAPLE_TEMPLATES_DIR, does not widen it)."""
    return tuple(yaml.safe_load((bundled("templates") / "search_repos.yaml").read_text())["repositories"])


def _query(words: str) -> str:
    """The key line, issues only, in as many of the listed repositories as the query length allows."""
    query = f"{words} is:issue"
    for repo in search_repositories():
        if len(query) + len(repo) + 6 > QUERY_CHARS:
            break
        query += f" repo:{repo}"
    return query


def _thread(item: dict, rank: int, limit: int) -> Optional[Reference]:
    """A search result as a link to its thread, or None when it is not an issue of a listed repository."""
    found = _ISSUE_URL.fullmatch(str(item.get("html_url", "")))
    listed = {repo.lower(): repo for repo in search_repositories()}
    if not found or found["repo"].lower() not in listed:
        return None
    state = f" ({item['state']})" if item.get("state") in ("open", "closed") else ""
    title = f"{listed[found['repo'].lower()]}#{found['number']}{state}"
    return Reference(source="github", title=title, url=found[0], summary="a GitHub issue thread about this error",
                     score=round(1.0 - rank / limit, 4))


# Who may answer for a repository (GitHub's author_association); anyone else's comment is no answer.
_MAINTAINERS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})


def _closing_answer(item: dict, thread: Reference, api_url: str, token: Optional[str], deadline: float) -> Optional[str]:
    """The link of the last maintainers' comment written before a thread closed as completed, or
    None: still open, closed as not planned, no such comment, or no time left."""
    left = deadline - time.monotonic()
    if item.get("state_reason") != "completed" or not item.get("comments") or not item.get("closed_at") or left <= 1:
        return None
    where = _ISSUE_URL.fullmatch(thread.url)
    url = f"{api_url.rstrip('/')}/repos/{where['repo']}/issues/{where['number']}/comments"  # the API's root, never the item's URLs
    try:
        comments = _get(url, token, {"per_page": 100}, timeout=(min(TIMEOUT[0], left), min(TIMEOUT[1], left)))
    except MapleError:  # the thread's link stands without its answer
        return None
    if not isinstance(comments, list):
        return None
    answers = [c for c in comments if isinstance(c, dict) and c.get("author_association") in _MAINTAINERS
               and str(c.get("created_at", "")) <= item["closed_at"]]  # fmt: skip  # ISO 8601 in UTC sorts as text
    link = re.escape(thread.url) + r"#issuecomment-\d+"
    return next((c["html_url"] for c in reversed(answers) if re.fullmatch(link, str(c.get("html_url", "")))), None)


def search_github(failure: Failure, api_url: str, token: Optional[str], limit: int = GITHUB_LIMIT) -> list[Reference]:
    """Issues of the listed repositories whose text holds the error's key line, best first, each as
    a link to its thread (title: repository#number) and, for one closed as completed, to the answer
    that closed it: nothing the thread's authors wrote is shown. At most BUDGET seconds in all."""
    deadline = time.monotonic() + BUDGET
    words = key_line(failure)
    if not words:
        return []
    found = _get(f"{api_url.rstrip('/')}/search/issues", token,
                 {"q": _query(words), "per_page": limit})  # fmt: skip  # words, not a phrase: the volatile parts are gone
    threads = []
    for rank, item in enumerate(found.get("items", [])[:limit]):
        thread = _thread(item, rank, limit)
        if thread is not None:
            threads.append(thread.model_copy(update={"closed_by": _closing_answer(item, thread, api_url, token, deadline)}))
    return threads


def online_note(failure: Optional[Failure], env: Mapping[str, str]) -> str:
    """GitHub threads about the failure as one sentence for a PR comment. The action goes online by
    default when it holds a token (issue 18 item 5b); without one, or when the search fails, it
    says nothing more than the offline diagnosis did."""
    if failure is None or not env.get("GITHUB_TOKEN"):
        return ""
    try:
        found = search_github(failure, github_api(env), env["GITHUB_TOKEN"])
    except MapleError:
        return ""
    # links only: the caller's Markdown escapes them (markdown.plain)
    threads = ", ".join(r.url + (f" (closed by the answer {r.closed_by})" if r.closed_by else "") for r in found)
    return f" Related GitHub threads: {threads}." if threads else ""
