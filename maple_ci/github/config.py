""".github/maple.yml: what the bot does in one repository.

    targets: [perlmutter, aurora]          # clusters the tracked scripts are kept ported to
    sources: ["jobs/*.sbatch"]             # globs (repository-relative) of the tracked launch scripts
    output: scripts                        # ported scripts go to <output>/<cluster>/
    verification:                          # backend per cluster: none | jacamar | slurm | local
      default: none                        # slurm and local need a self-hosted runner on the machine
      perlmutter: jacamar
    schedule:
      report_issue_title: Portability report  # the dashboard issue (one per repository)
      labels: [maple-ci]
      interval: daily                      # nightly verification: daily | weekly | monthly
      day: monday                          # weekly: the weekday; monthly runs on the 1st
    pull_requests:                         # the bot's PRs
      labels: [hpc]                        # added when a PR is opened
      reviewers: [mona]                    # logins asked for a review
      assignees: [hubot]
      title_prefix: "maple:"               # PR titles: "<prefix> port <scripts> to <clusters>"
      commit_prefix: "maple:"              # the bot's commit messages, likewise
      limit: 10                            # open maple-ci PRs at most before push and nightly wait (0: none)
    fixes: commit                          # a debug-agent fix whose re-run passed: commit | suggest
    refresh_on_push: true                  # a push to a tracked script refreshes the bot's PR
    ignore: [polaris]                      # clusters never ported to, whatever a command or push asks

A missing file means the defaults. MAPLE_TARGETS and MAPLE_BACKEND (the action's inputs) override
`targets` and `verification.default`, as DESIGN.md orders settings: variable over file.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path, PurePosixPath
from typing import Annotated, Iterable, Literal, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from maple_ci.errors import MapleError
from maple_ci.github import DEFAULT_PATH
from maple_ci.verify import BACKENDS

RunnerName = Literal[("none", *BACKENDS)]  # verification backends by name (maple_ci.verify)


class _Strict(BaseModel):
    # A misspelt key is an error, not a silently ignored setting.
    model_config = ConfigDict(extra="forbid")


WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


class Schedule(_Strict):
    report_issue_title: str = Field("Portability report", min_length=1, max_length=200)
    labels: list[str] = Field(default_factory=lambda: ["maple-ci"])
    # As Dependabot's schedule.interval/day: the workflow's cron wakes the bot each night, and the
    # bot verifies only on the days these name (a manual dispatch always runs).
    interval: Literal["daily", "weekly", "monthly"] = "daily"
    day: Literal[WEEKDAYS] = "monday"

    def due(self, day: date) -> bool:
        """Whether the scheduled verification runs on `day`."""
        if self.interval == "weekly":
            return WEEKDAYS[day.weekday()] == self.day
        return self.interval == "daily" or day.day == 1


# Allowlists: a GitHub login (letters, digits, single dashes, at most 39) and a plain label or prefix.
Login = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9](?:-?[A-Za-z0-9]){0,38}$")]
Label = Annotated[str, StringConstraints(pattern=r"^[\w .:/()-]{1,50}$")]
Prefix = Annotated[str, StringConstraints(pattern=r"^[\w .:/()\[\]-]{0,40}$")]


class PullRequests(_Strict):
    labels: list[Label] = Field(default_factory=list)
    reviewers: list[Login] = Field(default_factory=list)
    assignees: list[Login] = Field(default_factory=list)
    title_prefix: Prefix = "maple:"
    commit_prefix: Prefix = "maple:"
    # Open maple-ci PRs at most before push and nightly open no more (Renovate's prConcurrentLimit);
    # a person's request is always answered. 0: no limit.
    limit: int = Field(10, ge=0, le=100)


def _inside_repo(value: str) -> str:
    path = PurePosixPath(value)
    if path.is_absolute() or ".." in path.parts or "\\" in value:
        raise ValueError(f"{value!r} must be a relative path inside the repository")
    return value


class Config(_Strict):
    targets: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    output: str = "scripts"
    # `default` applies to every cluster not named; other keys are cluster names.
    verification: dict[str, RunnerName] = Field(default_factory=lambda: {"default": "none"})
    schedule: Schedule = Field(default_factory=Schedule)
    pull_requests: PullRequests = Field(default_factory=PullRequests)
    fixes: Literal["commit", "suggest"] = "commit"
    refresh_on_push: bool = True
    ignore: list[str] = Field(default_factory=list)  # cluster names
    # The user's Python environment where a center provides none (`maple port --python-env`):
    # `default` for every target, other keys are cluster names.
    python_env: dict[str, str] = Field(default_factory=dict)

    @field_validator("sources")
    @classmethod
    def _globs_inside(cls, globs: list[str]) -> list[str]:
        return [_inside_repo(g) for g in globs]

    @field_validator("python_env")
    @classmethod
    def _plain_paths(cls, envs: dict[str, str]) -> dict[str, str]:
        from maple_ci.python_env import check_env_path

        try:
            return {cluster: check_env_path(path) for cluster, path in envs.items()}
        except MapleError as error:
            raise ValueError(str(error)) from error

    @field_validator("output")
    @classmethod
    def _output_inside(cls, output: str) -> str:
        return _inside_repo(output).rstrip("/")

    def backend(self, cluster: str) -> str:
        return self.verification.get(cluster, self.verification.get("default", "none"))


def load_config(path: str | Path, known_clusters: Iterable[str], env: Mapping[str, str] = {}) -> Config:
    """The configuration at `path` (defaults when there is none), with env overrides applied.

    Raises MapleError naming the file and the key for anything a person must fix."""
    path = Path(path)
    config = _validated(path, _with_env(_read_settings(path), env))
    _check_clusters(path, config, known_clusters)
    return config


def _read_settings(path: Path) -> dict:
    """The file's mapping of settings; {} when there is no file (or it is empty)."""
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise MapleError(f"{path} is not valid YAML: {error}") from error
    if not isinstance(data, dict):
        raise MapleError(f"{path} must be a mapping of settings (targets, sources, ...), not a {type(data).__name__}")
    return data


def _with_env(data: dict, env: Mapping[str, str]) -> dict:
    """MAPLE_TARGETS and MAPLE_BACKEND over the file's `targets` and `verification.default`."""
    if env.get("MAPLE_TARGETS", "").strip():
        data["targets"] = env["MAPLE_TARGETS"].replace(",", " ").split()
    if env.get("MAPLE_BACKEND", "").strip():
        data["verification"] = {**(data.get("verification") or {}), "default": env["MAPLE_BACKEND"].strip()}
    return data


def _validated(path: Path, data: dict) -> Config:
    """The settings as a Config; every problem named by its key."""
    try:
        return Config.model_validate(data)
    except ValidationError as error:
        problems = [_problem(e) for e in error.errors()]
        raise MapleError(f"{path} is invalid:\n" + "\n".join(problems)) from error


def _problem(e) -> str:
    return f"  `{'.'.join(map(str, e['loc'])) or '(top level)'}`: {e['msg']}"


def _check_clusters(path: Path, config: Config, known_clusters: Iterable[str]) -> None:
    """Every cluster the settings name must be a known one."""
    known = set(known_clusters)
    unknown = [c for c in _named_clusters(config) if c not in known]
    if unknown:
        raise MapleError(f"{path}: unknown cluster(s) {', '.join(sorted(set(unknown)))} in `targets`, `ignore`, `verification` or `python_env`; "
                         f"known: {', '.join(sorted(known))}")


def _named_clusters(config: Config) -> list[str]:
    """The clusters named in `targets`, `ignore` and the keys of `verification` and `python_env`."""
    return config.targets + config.ignore + [k for k in [*config.verification, *config.python_env] if k != "default"]
