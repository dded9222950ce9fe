"""A stateful, in-process fake of the GitHub REST endpoints the bot uses.

Prism (test_github_openapi.py) proves each request matches GitHub's description; this fake keeps
state across requests so a test can assert the end result of a whole flow: branches, commits,
PRs, reviews, reactions, check runs, issues. It serves under /api/v3 like GitHub Enterprise Server, which
also proves the bot never assumes api.github.com's root paths.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

PREFIX = "/api/v3"


def _sha(kind: str, data: object) -> str:
    raw = data.encode() if isinstance(data, str) else json.dumps(data, sort_keys=True).encode()
    return hashlib.sha1(f"{kind} {len(raw)}\0".encode() + raw).hexdigest()


class FakeGitHub:
    """One repository, `owner/name`, whose `main` holds `files`. Attributes are the state tests read."""

    def __init__(self, owner: str = "octo", name: str = "ports", files: dict[str, str] | None = None):
        self.owner, self.name = owner, name
        self.blobs: dict[str, str] = {}
        self.trees: dict[str, dict[str, dict]] = {}  # sha -> {path: {"mode", "sha"}} (flat)
        self.commits: dict[str, dict] = {}
        self.refs: dict[str, str] = {}  # "heads/main" -> sha
        self.pulls: list[dict] = []
        self.issues: list[dict] = []  # plain issues; PRs and issues share numbers, as on GitHub
        self.reviews: list[dict] = []
        self.reactions: list[dict] = []
        self.comments: list[dict] = []
        self.check_runs: list[dict] = []
        self.permissions: dict[str, str] = {}
        self.statuses: list[dict] = []  # commit statuses, oldest first
        self.token_login = "github-actions[bot]"  # who API calls act as (GITHUB_TOKEN's identity)
        self.requests: list[dict] = []  # every request: method, path, query, body, and the route it hit
        self.fail_next: list[int] = []  # statuses to answer the next requests with; 403 = secondary rate limit
        self.fail_routes: dict[str, int] = {}  # route pattern -> status it answers every time (a persistent 5xx)
        self.refs["heads/main"] = self.commit_files(files or {"README.md": "hello\n"}, [], "initial")

    # --- helpers for tests to set up state directly ---
    def commit_files(self, files: dict[str, str], parents: list[str], message: str,
                     date: str = "2011-04-14T16:00:49Z", author: str = "Monalisa Octocat") -> str:
        base = dict(self.trees[self.commits[parents[0]]["tree"]]) if parents else {}
        for path, content in files.items():
            self.blobs[blob := _sha("blob", content)] = content
            base[path] = {"mode": "100644", "sha": blob}
        tree = self._store_tree(base)
        commit = {"tree": tree, "parents": parents, "message": message, "date": date, "author": author}
        self.commits[sha := _sha("commit", commit)] = commit
        return sha

    def open_pull(self, head: str, base: str, title: str = "source PR", body: str = "") -> dict:
        pull = {"number": self._next_number(), "head": head, "base": base, "title": title, "body": body, "state": "open",
                "head_sha": self.refs[f"heads/{head}"], "labels": [], "reviewers": [], "assignees": [], "merged": False}  # what GitHub still shows once the branch is deleted
        self.pulls.append(pull)
        return pull

    def _next_number(self) -> int:
        return len(self.pulls) + len(self.issues) + 1

    def pull(self, n: str) -> dict:
        return next(p for p in self.pulls if p["number"] == int(n))

    def files_at(self, ref: str) -> dict[str, str]:
        """The files at a ref ("heads/main") or a commit."""
        tree = self.trees[self.commits[self.refs.get(ref, ref)]["tree"]]
        return {path: self.blobs[entry["sha"]] for path, entry in tree.items()}

    def _store_tree(self, entries: dict[str, dict]) -> str:
        self.trees[sha := _sha("tree", entries)] = entries
        return sha

    # --- JSON shapes ---
    def url(self, path: str = "") -> str:
        return f"{self.base_url}/repos/{self.owner}/{self.name}{path}"

    def repo_json(self) -> dict:
        return {"id": 1, "name": self.name, "full_name": f"{self.owner}/{self.name}", "owner": {"login": self.owner, "type": "User"},
                "url": self.url(), "html_url": f"http://github.test/{self.owner}/{self.name}", "default_branch": "main"}

    def pull_json(self, p: dict) -> dict:
        n = p["number"]
        return {"number": n, "state": p["state"], "title": p["title"], "body": p["body"], "url": self.url(f"/pulls/{n}"),
                "merged": p.get("merged", False),
                "issue_url": self.url(f"/issues/{n}"), "html_url": f"http://github.test/{self.owner}/{self.name}/pull/{n}",
                "head": {"ref": p["head"], "sha": self.refs.get(f"heads/{p['head']}", p["head_sha"]),
                         "repo": p["head_repo"] if "head_repo" in p else self.repo_json()},
                "base": {"ref": p["base"], "sha": self.refs[f"heads/{p['base']}"], "repo": self.repo_json()}}

    def issue_json(self, i: dict) -> dict:
        n = i["number"]
        return {"id": 5000 + n, "number": n, "title": i["title"], "body": i["body"], "state": i["state"],
                "state_reason": i.get("state_reason"), "labels": [{"name": name} for name in i["labels"]],
                "user": {"login": "github-actions[bot]", "type": "Bot"}, "url": self.url(f"/issues/{n}"),
                "html_url": f"http://github.test/{self.owner}/{self.name}/issues/{n}"}

    def ref_json(self, ref: str) -> dict:
        return {"ref": f"refs/{ref}", "url": self.url(f"/git/refs/{ref}"), "object": {"type": "commit", "sha": self.refs[ref]}}

    def commit_json(self, sha: str) -> dict:
        c = self.commits[sha]
        person = {"name": "Monalisa Octocat", "email": "mona@github.test", "date": c.get("date", "2011-04-14T16:00:49Z")}
        author = {**person, **c.get("author_json", {"name": c.get("author", person["name"])})}
        committer = {**person, **c.get("committer_json", {})}
        return {"sha": sha, "url": self.url(f"/git/commits/{sha}"), "message": c["message"], "author": author, "committer": committer,
                "tree": {"sha": c["tree"], "url": self.url(f"/git/trees/{c['tree']}")},
                "parents": [{"sha": p, "url": self.url(f"/git/commits/{p}")} for p in c["parents"]]}

    # --- request handling: (method, path) -> (status, json) ---
    def handle(self, method: str, path: str, query: dict, body: dict) -> tuple[int, object]:
        request = {"method": method, "path": path, "query": query, "body": body, "route": None}
        self.requests.append(request)
        if self.fail_next:
            status = self.fail_next.pop(0)
            return status, {"message": "You have exceeded a secondary rate limit" if status == 403 else "Server Error"}
        repo = f"/repos/{self.owner}/{self.name}"
        if not path.startswith(repo):
            return 404, {"message": "Not Found"}
        route = f"{method} {path[len(repo):]}"
        for pattern, handler in self.routes:
            if m := re.fullmatch(pattern, route):
                request["route"] = pattern
                if pattern in self.fail_routes:
                    return self.fail_routes[pattern], {"message": "Server Error"}
                return handler(self, body, query, *m.groups())
        return 404, {"message": f"fake has no route for {route}"}

    def get_repo(self, body, query):
        return 200, self.repo_json()

    def get_ref(self, body, query, ref):
        return (200, self.ref_json(ref)) if ref in self.refs else (404, {"message": "Not Found"})

    def create_ref(self, body, query):
        ref = body["ref"].removeprefix("refs/")
        if ref in self.refs or body["sha"] not in self.commits:
            return 422, {"message": "Reference already exists or object missing"}
        self.refs[ref] = body["sha"]
        return 201, self.ref_json(ref)

    def update_ref(self, body, query, ref):
        if ref not in self.refs or body["sha"] not in self.commits:
            return 422, {"message": "Reference does not exist"}
        if not body.get("force") and self.refs[ref] not in self.commits[body["sha"]]["parents"]:
            return 422, {"message": "Update is not a fast forward"}
        self.refs[ref] = body["sha"]
        return 200, self.ref_json(ref)

    def delete_ref(self, body, query, ref):
        if self.refs.pop(ref, None) is None:
            return 422, {"message": "Reference does not exist"}
        return 204, None

    def get_git_commit(self, body, query, sha):
        return (200, self.commit_json(sha)) if sha in self.commits else (404, {"message": "Not Found"})

    def create_blob(self, body, query):
        assert body["encoding"] == "utf-8", body
        self.blobs[sha := _sha("blob", body["content"])] = body["content"]
        return 201, {"sha": sha, "url": self.url(f"/git/blobs/{sha}")}

    def create_tree(self, body, query):
        entries = dict(self.trees[body["base_tree"]]) if body.get("base_tree") else {}
        for e in body["tree"]:
            if e["type"] != "blob" or e["sha"] not in self.blobs:
                return 422, {"message": f"bad tree entry {e}"}
            entries[e["path"]] = {"mode": e["mode"], "sha": e["sha"]}
        sha = self._store_tree(entries)
        return 201, {"sha": sha, "url": self.url(f"/git/trees/{sha}"), "tree": [{"path": p, "type": "blob", **e} for p, e in entries.items()]}

    def create_commit(self, body, query):
        if body["tree"] not in self.trees or any(p not in self.commits for p in body["parents"]):
            return 422, {"message": "tree or parent missing"}
        commit = {"tree": body["tree"], "parents": body["parents"], "message": body["message"], "date": "2030-01-01T00:00:00Z"}
        if "author" in body:  # GitHub records the author given; without one, the token's user
            commit["author_json"] = {k: body["author"][k] for k in ("name", "email")}
        # The committer of an API commit is the token's user: for GITHUB_TOKEN, GitHub Actions' bot.
        commit["committer_json"] = {"name": "github-actions[bot]", "email": "41898282+github-actions[bot]@users.noreply.github.com"}
        self.commits[sha := _sha("commit", commit)] = commit
        return 201, self.commit_json(sha)

    def list_pulls(self, body, query):
        owner_branch = query.get("head", [""])[0]
        found = [p for p in self.pulls if p["state"] == query.get("state", ["open"])[0]
                 and (not owner_branch or owner_branch == f"{self.owner}:{p['head']}")
                 and p["base"] == query.get("base", [p["base"]])[0]]
        if query.get("direction", [""])[0] == "desc":  # sort=created: the newest first
            found.reverse()
        return 200, [self.pull_json(p) for p in found]

    @staticmethod
    def _too_long(body) -> bool:
        """GitHub's limits: 256 characters of title, 65536 of body (PRs, issues, comments)."""
        return len(body.get("title") or "") > 256 or len(body.get("body") or "") > 65536

    def create_pull(self, body, query):
        if self._too_long(body):
            return 422, {"message": "Validation Failed: title or body is too long"}
        if any(p["head"] == body["head"] and p["state"] == "open" for p in self.pulls):
            return 422, {"message": "A pull request already exists"}
        if f"heads/{body['head']}" not in self.refs:
            return 422, {"message": "head does not exist"}
        return 201, self.pull_json(self.open_pull(body["head"], body["base"], body["title"], body.get("body", "")))

    def get_pull(self, body, query, n):
        return 200, self.pull_json(self.pull(n))

    def edit_pull(self, body, query, n):
        if self._too_long(body):
            return 422, {"message": "Validation Failed: title or body is too long"}
        pull = self.pull(n)
        pull.update({k: body[k] for k in ("title", "body", "state") if k in body})
        return 200, self.pull_json(pull)

    def list_pull_files(self, body, query, n):
        pull = self.pull(n)
        head = self.files_at(self.refs.get(f"heads/{pull['head']}", pull["head_sha"]))
        base = self.files_at(f"heads/{pull['base']}")
        changed = [{"filename": p, "status": "modified" if p in base else "added"} for p in head if head[p] != base.get(p)]
        changed += [{"filename": p, "status": "removed"} for p in base if p not in head]
        return 200, [{**f, "sha": _sha("blob", head.get(f["filename"], "")), "additions": 0, "deletions": 0, "changes": 0} for f in changed]

    def create_review(self, body, query, n):
        """Accepts only what GitHub accepts: comments on lines of files the PR changes, at its head."""
        pull = self.pull(n)
        head = self.files_at(f"heads/{pull['head']}")
        base = self.files_at(f"heads/{pull['base']}")
        if body.get("commit_id") != self.refs[f"heads/{pull['head']}"]:
            return 422, {"message": "commit_id is not the PR head"}
        for c in body.get("comments", []):
            if c["path"] not in head or head[c["path"]] == base.get(c["path"]):
                return 422, {"message": f"{c['path']} is not part of the diff"}
            lines = head[c["path"]].count("\n")
            if c.get("side") != "RIGHT" or not 1 <= c.get("start_line", c["line"]) <= c["line"] <= lines:
                return 422, {"message": f"line {c} could not be resolved"}
        self.reviews.append({"pull": int(n), **body})
        return 200, {"id": len(self.reviews), "state": "COMMENTED", "body": body.get("body"), "commit_id": body.get("commit_id")}

    def list_reviews(self, body, query, n):
        found = [{"id": i + 1, "state": "COMMENTED", "body": r.get("body"), "commit_id": r.get("commit_id"),
                  "user": {"login": "github-actions[bot]", "type": "Bot"}, "pull_request_url": self.url(f"/pulls/{n}")}
                 for i, r in enumerate(self.reviews) if r["pull"] == int(n)]
        return 200, found

    def update_review(self, body, query, n, review_id):
        review = self.reviews[int(review_id) - 1]
        review["body"] = body["body"]
        return 200, {"id": int(review_id), "state": "COMMENTED", "body": body["body"], "commit_id": review.get("commit_id")}

    def add_labels(self, body, query, n):
        target = next((p for p in self.pulls if p["number"] == int(n)), None) or \
            next(i for i in self.issues if i["number"] == int(n))
        target["labels"] = list(dict.fromkeys(target["labels"] + body["labels"]))  # the documented object form
        return 200, [{"name": name} for name in target["labels"]]

    def add_assignees(self, body, query, n):
        pull = self.pull(n)
        pull["assignees"] = list(dict.fromkeys(pull["assignees"] + body["assignees"]))
        return 201, self.pull_json(pull) | {"assignees": [{"login": a} for a in pull["assignees"]]}

    def request_reviewers(self, body, query, n):
        pull = self.pull(n)
        pull["reviewers"] = list(dict.fromkeys(pull["reviewers"] + body.get("reviewers", [])))
        return 201, self.pull_json(pull)

    def list_issues(self, body, query):
        labels = set(query.get("labels", [""])[0].split(",")) - {""}
        found = [i for i in self.issues if i["state"] == query.get("state", ["open"])[0] and labels <= set(i["labels"])]
        return 200, [self.issue_json(i) for i in found]

    def create_issue(self, body, query):
        issue = {"number": self._next_number(), "title": body["title"], "body": body.get("body", ""), "state": "open",
                 "labels": list(body.get("labels", []))}
        self.issues.append(issue)
        return 201, self.issue_json(issue)

    def edit_issue(self, body, query, n):
        issue = next(i for i in self.issues if i["number"] == int(n))
        issue.update({k: body[k] for k in ("title", "body", "state", "state_reason") if k in body})
        return 200, self.issue_json(issue)

    def create_reaction(self, body, query, comment_id):
        self.reactions.append({"comment_id": int(comment_id), "content": body["content"]})
        return 201, {"id": len(self.reactions), "content": body["content"]}

    def create_comment(self, body, query, n):
        if self._too_long(body):
            return 422, {"message": "Validation Failed: body is too long (maximum is 65536 characters)"}
        self.comments.append({"issue": int(n), "body": body["body"]})
        return 201, {"id": 1000 + len(self.comments), "body": body["body"], "url": self.url(f"/issues/comments/{1000 + len(self.comments)}")}

    def get_permission(self, body, query, login):
        return 200, {"permission": self.permissions.get(login, "read"), "user": {"login": login}}

    def create_status(self, body, query, sha):
        if sha not in self.commits:
            return 422, {"message": f"No commit found for SHA: {sha}"}
        status = {"id": len(self.statuses) + 1, "sha": sha, "state": body["state"], "context": body.get("context", "default"),
                  "description": body.get("description"), "url": self.url(f"/statuses/{sha}"),
                  "creator": {"login": self.token_login, "type": "Bot"}}  # who the token acts as
        self.statuses.append(status)
        return 201, {k: v for k, v in status.items() if k != "sha"}

    def combined_status(self, body, query, sha):
        if sha not in self.commits:
            return 422, {"message": f"No commit found for SHA: {sha}"}
        newest = {}
        for status in self.statuses:
            if status["sha"] == sha:
                newest[status["context"]] = {k: v for k, v in status.items() if k != "sha"}
        statuses = list(newest.values())[::-1]
        state = "pending" if not statuses else "success" if all(s["state"] == "success" for s in statuses) else "failure"
        return 200, {"state": state, "sha": sha, "total_count": len(statuses), "statuses": statuses,
                     "commit_url": self.url(f"/commits/{sha}"), "url": self.url(f"/commits/{sha}/status")}

    def create_check_run(self, body, query):
        annotations = body.get("output", {}).get("annotations", [])
        if len(annotations) > 50:
            return 422, {"message": "Only 50 annotations are allowed per request"}
        run = {**body, "id": len(self.check_runs) + 1, "annotations": list(annotations), "requests": 1}
        self.check_runs.append(run)
        return 201, {"id": run["id"], "name": body["name"], "head_sha": body["head_sha"], "url": self.url(f"/check-runs/{run['id']}")}

    def update_check_run(self, body, query, run_id):
        run = self.check_runs[int(run_id) - 1]
        annotations = body.get("output", {}).get("annotations", [])
        if len(annotations) > 50:
            return 422, {"message": "Only 50 annotations are allowed per request"}
        run.update({k: v for k, v in body.items() if k != "output"})
        if "output" in body:
            run["output"] = body["output"]
        run["annotations"] += annotations
        run["requests"] += 1
        return 200, {"id": run["id"], "name": run["name"], "head_sha": run["head_sha"], "url": self.url(f"/check-runs/{run['id']}")}

    def list_commits(self, body, query):
        """GET /commits?sha=&path=: the commits reachable from `sha` that changed `path`, newest first."""
        sha, path = self.refs.get(f"heads/{query['sha'][0]}", query["sha"][0]), query.get("path", [None])[0]
        found, queue, seen = [], [sha], set()
        while queue:
            sha = queue.pop(0)
            if sha in seen or sha not in self.commits:
                continue
            seen.add(sha)
            parents = self.commits[sha]["parents"]
            blob = self.trees[self.commits[sha]["tree"]].get(path, {}).get("sha")
            before = self.trees[self.commits[parents[0]]["tree"]].get(path, {}).get("sha") if parents else None
            if path is None or blob != before:
                found.append({"sha": sha, "url": self.url(f"/commits/{sha}"), "commit": self.commit_json(sha),
                              "parents": [{"sha": p} for p in parents]})
            queue += parents
        return 200, found

    def get_tree(self, body, query, sha):
        """GET /git/trees/{sha}?recursive=1: the fake's trees are flat, every path at once. As on
        GitHub, a commit or a branch name stands for its tree."""
        sha = self.refs.get(f"heads/{sha}", sha)
        sha = self.commits[sha]["tree"] if sha in self.commits else sha
        if sha not in self.trees:
            return 404, {"message": "Not Found"}
        entries = [{"path": path, "mode": e["mode"], "type": "blob", "sha": e["sha"], "url": self.url(f"/git/blobs/{e['sha']}")}
                   for path, e in self.trees[sha].items()]
        return 200, {"sha": sha, "url": self.url(f"/git/trees/{sha}"), "tree": entries, "truncated": False}

    def get_blob(self, body, query, sha):
        if sha not in self.blobs:
            return 404, {"message": "Not Found"}
        return 200, {"sha": sha, "encoding": "base64", "content": base64.b64encode(self.blobs[sha].encode()).decode(),
                     "size": len(self.blobs[sha]), "url": self.url(f"/git/blobs/{sha}")}

    def commit_pulls(self, body, query, sha):
        """GET /commits/{sha}/pulls: the PRs whose merge (or head) is that commit."""
        return 200, [self.pull_json(p) for p in self.pulls
                     if sha in (p.get("merge_commit_sha"), self.refs.get(f"heads/{p['head']}", p.get("head_sha")))]

    def list_check_runs(self, body, query, sha):
        status = query.get("status", [None])[0]
        found = [{k: run.get(k) for k in ("id", "name", "head_sha", "status", "conclusion")} | {"url": self.url(f"/check-runs/{run['id']}")}
                 for run in self.check_runs if run["head_sha"] == sha and status in (None, run.get("status"))]
        return 200, {"total_count": len(found), "check_runs": found}

    routes = [
        (r"GET ", get_repo),
        (r"GET /git/ref/(.+)", get_ref),
        (r"POST /git/refs", create_ref),
        (r"PATCH /git/refs/(.+)", update_ref),
        (r"DELETE /git/refs/(.+)", delete_ref),
        (r"GET /git/commits/(\w+)", get_git_commit),
        (r"POST /git/blobs", create_blob),
        (r"POST /git/trees", create_tree),
        (r"POST /git/commits", create_commit),
        (r"GET /pulls", list_pulls),
        (r"POST /pulls", create_pull),
        (r"GET /pulls/(\d+)", get_pull),
        (r"PATCH /pulls/(\d+)", edit_pull),
        (r"GET /pulls/(\d+)/files", list_pull_files),
        (r"POST /pulls/(\d+)/reviews", create_review),
        (r"GET /pulls/(\d+)/reviews", list_reviews),
        (r"PUT /pulls/(\d+)/reviews/(\d+)", update_review),
        (r"POST /pulls/(\d+)/requested_reviewers", request_reviewers),
        (r"POST /issues/(\d+)/labels", add_labels),
        (r"POST /issues/(\d+)/assignees", add_assignees),
        (r"GET /issues", list_issues),
        (r"POST /issues", create_issue),
        (r"PATCH /issues/(\d+)", edit_issue),
        (r"POST /issues/comments/(\d+)/reactions", create_reaction),
        (r"POST /issues/(\d+)/comments", create_comment),
        (r"GET /collaborators/([^/]+)/permission", get_permission),
        (r"POST /check-runs", create_check_run),
        (r"PATCH /check-runs/(\d+)", update_check_run),
        (r"POST /statuses/(\w+)", create_status),
        (r"GET /commits/(\w+)/status", combined_status),
        (r"GET /commits/(\w+)/check-runs", list_check_runs),
        (r"GET /commits", list_commits),
        (r"GET /git/trees/([\w./-]+)", get_tree),
        (r"GET /git/blobs/(\w+)", get_blob),
        (r"GET /commits/(\w+)/pulls", commit_pulls),
    ]

    # --- serving ---
    def __enter__(self) -> "FakeGitHub":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                url = urlparse(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else {}
                with fake.lock:  # one request at a time: state changes stay consistent
                    status, data = fake.handle(self.command, url.path.removeprefix(PREFIX), parse_qs(url.query), body)
                raw = b"" if status == 204 else json.dumps(data).encode()
                self.send_response(status)
                if status == 403:  # how GitHub marks a secondary rate limit
                    self.send_header("Retry-After", "0")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

            def log_message(self, *args):  # keep pytest output clean
                pass

        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_port}{PREFIX}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
