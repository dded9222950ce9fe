"""Retrieval beyond the knowledge base: the centers' known issues shipped with the package, and
GitHub's issue search (--online). github.com is stood in for by a local HTTP server that answers
with a response in the format GitHub's REST documentation publishes for search/issues
(tests/data/github_search): an issue of a listed repository (NVIDIA/nccl) and one of anyone's whose
title carries a command; for the closing answer, closed and open threads and a closed thread's
comments in the shape GitHub's REST documentation gives for "List issue comments"."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from maple_ci import debug
from maple_ci.debug.retrieval import key_line, load_passages, search_docs

RECORDED = Path(__file__).parent / "data" / "github_search"
SHM = "nid001234:4242:4300 [0] NCCL WARN Error: failed to extend /dev/shm/nccl-Xy12 to 9637888 bytes\n"
SCRIPT = "#!/bin/bash\n#SBATCH -N 2\nsrun python train.py\n"


pytestmark = pytest.mark.usefixtures("module_data_dir")


@pytest.fixture
def github():
    """A stand-in for api.github.com: the recorded answers, every request kept for the test."""
    seen: list[tuple[str, dict, dict]] = []
    status = {"code": 200, "search": "search_issues.json", "comments": 200}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            url = urlparse(self.path)
            seen.append((url.path, parse_qs(url.query), dict(self.headers)))
            api = f"http://127.0.0.1:{self.server.server_port}"
            files = {"/search/issues": status["search"], "/repos/NVIDIA/nccl/issues/1837/comments": "issue_comments_1837.json"}
            name = files.get(url.path)
            code = (status["code"] if url.path.startswith("/search/") else status["comments"]) if name else 404
            body = (RECORDED / name).read_text().replace("{api}", api) if name and code == 200 else '{"message": "no"}'
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", seen, status
    server.shutdown()


def test_online_search_looks_in_the_listed_repositories_and_shows_links_only(github):
    """Attack (issue 26 item 6, review P7): before, any public issue matching the key words was
    shown with its title, and the comment most reacted to (anyone can react) as its "answer:". Now
    the query names the frameworks' and centers' repositories, a result from any other is dropped,
    and a listed one is its link only: repository#number, nothing its authors wrote."""
    api, seen, _ = github
    found = debug.diagnose(SCRIPT, SHM, None, online={"GITHUB_API_URL": api, "GITHUB_TOKEN": "t0ken"})
    path, query, headers = seen[0]
    assert path == "/search/issues" and headers["Authorization"] == "Bearer t0ken"
    q = query["q"][0]
    assert q.startswith("NCCL WARN Error failed to extend to bytes is:issue repo:pytorch/pytorch repo:NVIDIA/nccl ")
    assert len(q) <= 256 and not any(part in q for part in ("nid001234", "/dev/shm", "9637888"))  # what differs per run
    [thread] = [r for r in found.references if r.source == "github"]
    assert (thread.title, thread.url) == ("NVIDIA/nccl#77 (open)", "https://github.com/NVIDIA/nccl/issues/77")
    shown = thread.model_dump_json()
    assert "answer" not in shown and "shm error" not in shown and "evil.example" not in found.model_dump_json()
    assert [p for p, _, _ in seen] == ["/search/issues"]  # no comments fetched: none is shown


def test_offline_is_the_default_and_a_failed_search_leaves_the_diagnosis_whole(github):
    api, seen, status = github
    offline = debug.diagnose(SCRIPT, SHM, None)
    assert not seen and not offline.references
    status["code"] = 403  # rate-limited
    online = debug.diagnose(SCRIPT, SHM, None, online={"GITHUB_API_URL": api})
    assert "HTTP 403" in online.notes[0] and online.failure == offline.failure and online.advice == offline.advice


def test_key_line_keeps_words_that_carry_between_runs():
    failure = debug.locate("[rank3]: torch.distributed.DistNetworkError: Connection reset by peer at 10.1.2.3:29500 /tmp/x\n")
    assert key_line(failure) == "torch.distributed.DistNetworkError Connection reset by peer at"


def test_the_centers_known_issues_are_found_for_an_error_the_knowledge_base_has_no_entry_for():
    assert len(load_passages()) >= 10 and all(p.url.startswith("https://") for p in load_passages())
    failure = debug.locate(SHM)
    assert not debug.exact_matches(failure)
    top = search_docs(failure)[0]
    assert top.source == "docs" and "/dev/shm" in top.title and top.url.startswith("https://docs.nvidia.com/")
    found = debug.diagnose(SCRIPT, "RuntimeError: Number of dpcpp devices should be greater than zero!\n", None, docs=True)
    assert found.references and "dpcpp" in found.references[0].title


def test_the_action_goes_online_when_it_holds_a_token_and_says_nothing_more_without(github):
    from maple_ci.debug.retrieval import online_note

    api, seen, status = github
    failure = debug.locate(SHM)
    assert online_note(failure, {"GITHUB_API_URL": api}) == "" and not seen  # no token: offline
    note = online_note(failure, {"GITHUB_API_URL": api, "GITHUB_TOKEN": "t0ken"})
    assert note == " Related GitHub threads: https://github.com/NVIDIA/nccl/issues/77."  # links only
    status["code"] = 403  # a failed search leaves the note as the offline one
    assert online_note(failure, {"GITHUB_API_URL": api, "GITHUB_TOKEN": "t0ken"}) == ""


NO_FAMILY = ("ncclInternalError: Internal check failed.\nLast error:\n"
             "ncclSocketInit: connecting to address  with family 59936 is neither AF_INET(2) nor AF_INET6(10)\n")  # fmt: skip


def test_a_thread_closed_as_completed_links_the_maintainers_answer_that_closed_it(github):
    """The last comment a maintainer (MEMBER/OWNER/COLLABORATOR) wrote before the close, as a link:
    not an outsider's comment however popular, not a maintainer's link to another site, not one
    written after the close; a thread closed as not planned or still open has no answer."""
    api, seen, status = github
    status["search"] = "search_issues_closed.json"
    found = debug.diagnose(SCRIPT, NO_FAMILY, None, online={"GITHUB_API_URL": api, "GITHUB_TOKEN": "t0ken"})
    threads = {r.title: r.closed_by for r in found.references if r.source == "github"}
    assert threads == {"NVIDIA/nccl#1837 (closed)": "https://github.com/NVIDIA/nccl/issues/1837#issuecomment-5002",
                       "pytorch/pytorch#9001 (closed)": None, "NVIDIA/nccl#1900 (open)": None}  # fmt: skip
    assert [p for p, _, _ in seen] == ["/search/issues", "/repos/NVIDIA/nccl/issues/1837/comments"]
    shown = found.model_dump_json()
    assert "evil.example" not in shown and "does not exist on these nodes" not in shown  # links only, no comment's text


def test_a_failed_answer_lookup_keeps_the_threads_and_the_note_renders_links_only(github):
    from maple_ci.debug.retrieval import online_note
    from maple_ci.github.markdown import plain

    api, seen, status = github
    status["search"] = "search_issues_closed.json"
    env = {"GITHUB_API_URL": api, "GITHUB_TOKEN": "t0ken"}
    note = online_note(debug.locate(NO_FAMILY), env)
    assert "https://github.com/NVIDIA/nccl/issues/1837 (closed by the answer https://github.com/NVIDIA/nccl/issues/1837#issuecomment-5002)" in note
    assert "](" not in plain(note) and "\u200b" in plain(note)  # no Markdown link, no autolink: plain text
    status["comments"] = 502
    note = online_note(debug.locate(NO_FAMILY), env)
    assert "https://github.com/NVIDIA/nccl/issues/1837," in note and "closed by" not in note


def test_the_answers_are_looked_up_only_while_the_search_has_time_left(github, monkeypatch):
    from maple_ci.debug import retrieval

    api, seen, status = github
    status["search"] = "search_issues_closed.json"
    monkeypatch.setattr(retrieval, "BUDGET", 0.5)  # less than the 1 s an answer's lookup needs at least
    found = retrieval.search_github(debug.locate(NO_FAMILY), api, "t0ken")
    assert len(found) == 3 and all(r.closed_by is None for r in found) and [p for p, _, _ in seen] == ["/search/issues"]
