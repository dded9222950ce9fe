"""Who may make the bot run a `/maple` command: people with a standing relation to the repository
*and* write access, and the polite reply everyone else gets. Pure functions: no network.
"""

from __future__ import annotations

# author_association values of people with a standing relation to the repository; anyone else is
# ignored without an API call. The association alone is not enough (an org MEMBER may only have
# read access), so the collaborator permission API must confirm write access as well.
TRUSTED_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})


def refusal(login: str) -> str:
    """The reply to a command from someone who may not run it: polite, and it changes nothing."""
    return (f"Sorry @{login}, maple-ci only runs commands from people with write access to this repository, "
            "because it pushes branches and opens pull requests. A maintainer can run the command for you.")


def authorize(author_association: str, permission: str | None) -> bool:
    """Whether a commenter may make the bot push: a trusted association *and* write access, as the
    collaborator permission API reports it (None when it was not asked or the user is unknown)."""
    return author_association in TRUSTED_ASSOCIATIONS and permission in WRITE_PERMISSIONS
