"""Cut GitHub's OpenAPI description down to the operations maple-ci calls.

The full description (13 MB, @octokit/openapi) takes Prism about 45 s to load; these few paths and
the components they reference load in seconds.

Usage: python cut_spec.py FULL.json OUT.json [API_URL]
API_URL replaces https://api.github.com in the examples, so the `url` fields of Prism's answers
lead back to Prism: PyGithub follows those URLs and refuses hosts other than its base URL's.
"""

import json
import sys

# Every REST operation maple_ci.github uses; a new call in the bot needs a line here.
OPERATIONS = {
    "/repos/{owner}/{repo}": ["get"],
    "/repos/{owner}/{repo}/git/ref/{ref}": ["get"],
    "/repos/{owner}/{repo}/git/refs": ["post"],
    "/repos/{owner}/{repo}/git/refs/{ref}": ["patch", "delete"],
    "/repos/{owner}/{repo}/git/commits": ["post"],
    "/repos/{owner}/{repo}/git/commits/{commit_sha}": ["get"],
    "/repos/{owner}/{repo}/git/blobs": ["post"],
    "/repos/{owner}/{repo}/git/trees": ["post"],
    "/repos/{owner}/{repo}/pulls": ["get", "post"],
    "/repos/{owner}/{repo}/pulls/{pull_number}": ["get", "patch"],
    "/repos/{owner}/{repo}/pulls/{pull_number}/files": ["get"],
    "/repos/{owner}/{repo}/pulls/{pull_number}/reviews": ["get", "post"],
    "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}": ["put"],
    "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers": ["post"],
    "/repos/{owner}/{repo}/issues/{issue_number}/labels": ["post"],
    "/repos/{owner}/{repo}/issues/{issue_number}/assignees": ["post"],
    "/repos/{owner}/{repo}/issues": ["get", "post"],
    "/repos/{owner}/{repo}/issues/{issue_number}": ["patch"],
    "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions": ["post"],
    "/repos/{owner}/{repo}/issues/{issue_number}/comments": ["post"],
    "/repos/{owner}/{repo}/collaborators/{username}/permission": ["get"],
    "/repos/{owner}/{repo}/check-runs": ["post"],
    "/repos/{owner}/{repo}/check-runs/{check_run_id}": ["patch"],
    "/repos/{owner}/{repo}/statuses/{sha}": ["post"],
    "/repos/{owner}/{repo}/commits/{ref}/status": ["get"],
    "/repos/{owner}/{repo}/commits/{ref}/check-runs": ["get"],
    "/repos/{owner}/{repo}/commits": ["get"],  # a script's history, for a merged fork PR (approval.py)
    "/repos/{owner}/{repo}/commits/{commit_sha}/pulls": ["get"],
    "/repos/{owner}/{repo}/git/trees/{tree_sha}": ["get"],  # a source's own stamp (a port of a port)
    "/repos/{owner}/{repo}/git/blobs/{file_sha}": ["get"],
}


def cut(spec: dict) -> dict:
    paths = {}
    for path, methods in OPERATIONS.items():
        item = spec["paths"][path]
        paths[path] = {k: v for k, v in item.items() if k in methods or k == "parameters"}
    components: dict[str, dict] = {}
    pending = [paths]
    while pending:  # follow "$ref"s until every referenced component is kept
        node = pending.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/"):
                kind, name = ref.split("/")[2:4]
                if name not in components.setdefault(kind, {}):
                    components[kind][name] = spec["components"][kind][name]
                    pending.append(components[kind][name])
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    if "link" in components.get("headers", {}):
        # The canned Link header names a next page ("/resource?page=2") that Prism does not serve;
        # PyGithub follows it. One page is what the examples hold.
        components["headers"]["link"] = {**components["headers"]["link"], "example": '<https://api.github.com/resource?page=1>; rel="first"'}
    return {"openapi": spec["openapi"], "info": spec["info"], "servers": [{"url": "/"}], "paths": paths, "components": components}


if __name__ == "__main__":
    full, out, api_url = (sys.argv[1:] + ["https://api.github.com"])[:3]
    with open(full, encoding="utf-8") as f:
        spec = json.load(f)
    with open(out, "w", encoding="utf-8") as f:
        f.write(json.dumps(cut(spec)).replace("https://api.github.com", api_url))
