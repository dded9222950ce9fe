"""The onboarding PR, as Renovate's: in a repository with no .github/maple.yml, the bot's first
push, nightly or manual run opens one PR "Configure maple-ci" that adds the file, proposed from the
launch scripts on the default branch (init_config.propose). Merging it turns the bot on: the push
that merges it ports every tracked script. Closed without merging, it is not opened again; adding
the file by hand turns the bot on as well.
"""

from __future__ import annotations

from github.Repository import Repository

from maple_ci.github.config import DEFAULT_PATH
from maple_ci.github.delivery import closed_pr, deliver, open_pr
from maple_ci.github.markdown import block_fence, code
from maple_ci.init_config import Proposal

KEY = "configure"  # the branch maple/port-configure
TITLE = "Configure maple-ci"
# The bot's own runs (a dispatch without a command is the nightly's); a request is answered as asked.
EVENTS = ("push", "schedule", "workflow_dispatch")


def onboard(repo: Repository, base: str, proposal: Proposal) -> str:
    """Open (or bring up to date) the onboarding PR into `base`; what was done, for the log."""
    if open_pr(repo, KEY, base) is None and closed_pr(repo, KEY, base) is not None:
        return (f"the onboarding PR was closed without merging: maple-ci stays off until {DEFAULT_PATH} is added "
                "(`maple init` writes it)")
    delivered = deliver(repo, KEY, {DEFAULT_PATH: proposal.config}, base, TITLE, onboarding_body(proposal, base),
                        commit_title=f"maple: add {DEFAULT_PATH}")
    assert delivered.pr is not None  # the file is not on the base, or there would be a configuration
    return f"onboarding PR: {delivered.pr.html_url}"


def onboarding_body(proposal: Proposal, base: str) -> str:
    """What the PR tells the maintainer: what was found, what is proposed, what merging does."""
    fence = block_fence(proposal.config)
    found = [f"- {code(s)}" + (f", written for {c}" if c else "") for s, c in proposal.scripts.items()]
    lines = ["Welcome to maple-ci. This PR adds its configuration; **merging it turns maple-ci on**.", "",
             "**Launch scripts found**", *(found or ["- none: list yours under `sources` before merging"]), "",
             f"**Proposed targets**: {', '.join(proposal.targets) or 'none: name them under `targets`'} "
             "(one cluster per GPU vendor that the scripts were not written for; edit the list here).", "",
             "**What happens once merged**",
             f"- The merge itself ports every tracked script to the targets, in one PR into {code(base)}.",
             "- A push that changes a tracked script updates that PR; each night the ported scripts are verified and "
             "one dashboard issue keeps a row per script and cluster.",
             "- `/maple port <cluster>` in a PR ports its scripts on request; `/maple help` lists every command.", "",
             f"Edit {code(DEFAULT_PATH)} in this PR as you like (`maple config check` checks it). "
             "Close this PR to keep maple-ci off: it does not ask again.", "",
             "<details><summary>The file</summary>", "", f"{fence}yaml", proposal.config.rstrip(), fence, "</details>"]
    return "\n".join(lines)
