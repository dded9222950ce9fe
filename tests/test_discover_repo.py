"""The bot's use of a repository's own cluster profiles (.github/maple/clusters/*.yaml): each
passes the profile schema and the values table's rule for what a port may set on its target, or
the run stops naming the file and nothing is added."""

from pathlib import Path

import pytest
import yaml

from maple_ci.discover import discover
from maple_ci.discover.probe import Recorded
from maple_ci.discover.profile import render
from maple_ci.errors import MapleError
from maple_ci.github.repo_profiles import FOLDER, use_repository_profiles

RECORDED = Path(__file__).parent / "data" / "discover" / "maple-test"


def _write(root: Path, name: str, edit=lambda data: data) -> Path:
    data = yaml.safe_load(render(discover(Recorded(RECORDED)), name, "2026-11-29", "recorded outputs"))
    folder = root / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(edit(data), sort_keys=False))
    return path


def test_a_repositorys_checked_profile_becomes_a_target(tmp_path, monkeypatch):
    from maple_ci.profiles import load_profiles

    _write(tmp_path, "lab-cluster")
    env = {}
    assert [p.name for p in use_repository_profiles(tmp_path, env)] == ["lab-cluster.yaml"]
    monkeypatch.setenv("MAPLE_CLUSTERS_DIR", env["MAPLE_CLUSTERS_DIR"])
    assert load_profiles()["lab-cluster"].queues[0].name == "gpu"


@pytest.mark.parametrize("edit, reason", [
    (lambda d: {**d, "env": {"LD_PRELOAD": "/tmp/x.so"}}, "LD_PRELOAD"),
    (lambda d: {**d, "env": {"MY_SITE_SETTING": "x"}}, "not on the allowlist"),
    (lambda d: {**d, "frameworks": {"pytorch": {"env": {"PYTHONPATH": "/evil"}}}}, "PYTHONPATH"),
    (lambda d: {**d, "gpus_per_node": 0}, "gpus_per_node"),
])
def test_a_profile_that_sets_what_a_port_may_not_stops_the_run_and_adds_nothing(tmp_path, edit, reason):
    _write(tmp_path, "good")
    _write(tmp_path, "bad", edit)
    env = {}
    with pytest.raises(MapleError, match=reason):
        use_repository_profiles(tmp_path, env)
    assert env == {}


def test_a_linked_profile_is_refused(tmp_path):
    outside = _write(tmp_path / "elsewhere", "linked")
    folder = tmp_path / FOLDER
    folder.mkdir(parents=True)
    (folder / "linked.yaml").symlink_to(outside)
    with pytest.raises(MapleError, match="not a regular file"):
        use_repository_profiles(tmp_path, {})


def test_a_repository_without_profiles_changes_nothing(tmp_path):
    env = {"MAPLE_CLUSTERS_DIR": "/x"}
    assert use_repository_profiles(tmp_path, env) == [] and env == {"MAPLE_CLUSTERS_DIR": "/x"}
