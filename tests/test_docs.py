"""The documentation site (mkdocs.yml, docs/): it builds with every warning an error, every link
inside it reaches a page and an anchor that exist (checked offline, in the built HTML), the
machines page lists every cluster profile, and the README's links and commands hold."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from urllib.parse import unquote, urlsplit

import pytest

REPO = Path(__file__).resolve().parents[1]


class _Page(HTMLParser):
    """The ids a page defines and the links it makes (href and src)."""

    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if attrs.get(key):
                self.ids.add(attrs[key])
        for key in ("href", "src"):
            if attrs.get(key) is not None:
                self.links.append(attrs[key])


def read_site(site: Path) -> dict[str, _Page]:
    """Every built HTML page by its path under the site, parsed."""
    pages = {}
    for path in site.rglob("*.html"):
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path.relative_to(site).as_posix()] = page
    return pages


def _target(site: Path, page: str, path: str) -> str | None:
    """The site file a link from `page` names (a folder means its index.html), or None. A path from
    the root (404.html's, which is served at any depth) starts at the site's root."""
    base = PurePosixPath() if path.startswith("/") else PurePosixPath(page).parent
    joined = base / unquote(path).lstrip("/")
    parts: list[str] = []
    for part in joined.parts:
        if part == "..":
            if not parts:
                return None  # above the site's root
            parts.pop()
        elif part != ".":
            parts.append(part)
    name = "/".join(parts)
    if (site / name).is_dir():
        name = f"{name}/index.html".lstrip("/")
    return name if (site / name).is_file() else None


def check_links(site: Path) -> tuple[list[str], list[str]]:
    """(broken, external): every internal link or anchor of the built site that does not resolve,
    and the external http(s) links, which are only checked to be well-formed (no network here)."""
    pages = read_site(site)
    broken, external = [], set()
    for name, page in pages.items():
        for link in page.links:
            url = urlsplit(link)
            if url.scheme in ("http", "https"):
                if not url.netloc or re.search(r"\s", link):
                    broken.append(f"{name}: malformed external link {link!r}")
                external.add(link)
                continue
            if url.scheme or url.netloc:
                if url.scheme != "mailto":
                    broken.append(f"{name}: link of an unexpected kind {link!r}")
                continue
            target = _target(site, name, url.path) if url.path else name
            if target is None:
                broken.append(f"{name}: {link!r} names no file of the site")
            elif url.fragment and target.endswith(".html") and unquote(url.fragment) not in pages[target].ids:
                broken.append(f"{name}: {link!r}: no anchor #{url.fragment} in {target}")
    return broken, sorted(external)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO / "mkdocs.yml"),
                          "--site-dir", str(out)], cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}\n{run.stderr}"
    return out


def test_every_internal_link_and_anchor_of_the_site_resolves(site):
    broken, external = check_links(site)
    assert not broken, "\n".join(broken)
    print(f"{len(external)} external links, well-formed, not fetched:", *external, sep="\n  ")
    assert any("docs.nersc.gov" in link for link in external)  # the machines table's sources are links


def test_the_link_check_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "index.html").write_text('<a href="a/#here">ok</a> <a href="a/#gone">x</a> <a href="b/">x</a>'
                                         '<a href="../../etc/passwd">x</a> <a href="https://ok.example/x">x</a>'
                                         '<a href="https:///nohost">x</a> <a href="#top">x</a> <p id="top"></p> <a href="/a/#here">ok</a>')
    (tmp_path / "a" / "index.html").write_text('<h2 id="here">Here</h2><a href="../#top">up</a>')
    broken, external = check_links(tmp_path)
    assert [line.split(": ", 1)[1] for line in broken] == [
        "'a/#gone': no anchor #gone in a/index.html", "'b/' names no file of the site",
        "'../../etc/passwd' names no file of the site", "malformed external link 'https:///nohost'"]
    assert external == ["https:///nohost", "https://ok.example/x"]


def test_the_machines_page_lists_every_cluster_profile(site):
    html = (site / "machines" / "index.html").read_text(encoding="utf-8")
    body = re.search(r"<tbody>(.*?)</tbody>", html, re.S).group(1)
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    names = sorted(path.stem for path in (REPO / "templates" / "clusters").glob("*.yaml"))
    listed = sorted(re.search(r"\(<code>([^<]+)</code>\)", row).group(1) for row in rows)
    assert listed == names
    count = re.search(r"built with (\d+) clusters and (\d+) launch templates", html)
    assert count and int(count.group(1)) == len(names)


def test_every_page_of_docs_is_in_the_site_and_its_navigation(site):
    home = read_site(site)["index.html"]
    for page in sorted((REPO / "docs").rglob("*.md")):
        built = "index.html" if page.name == "index.md" else f"{page.relative_to(REPO / 'docs').with_suffix('')}/index.html"
        assert (site / built).is_file(), page
        if page.name != "index.md":
            assert f"{page.stem}/" in home.links, f"{page.name} is not in the navigation"


def test_the_readme_links_resolve_and_its_two_commands_are_make_targets():
    readme = (REPO / "README.md").read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert len(links) > 10
    for link in links:
        assert urlsplit(link).scheme or (REPO / urlsplit(link).path).is_file(), link
    assert "\n    make demo\n" in readme and "\n    make test\n" in readme
    targets = re.findall(r"^([a-z]+):", (REPO / "Makefile").read_text(), re.M)
    assert {"demo", "test", "docs"} <= set(targets)
    assert (REPO / ".ci" / "run").read_text().rstrip().endswith("make test")  # CI runs the README's command
    assert len(readme.splitlines()) < 120


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_page_the_nav_does_not_name_is_appended_to_it(tmp_path):
    """Pages other helpers add (docs/speed.md, ...) build and are reachable before the nav names them."""
    for name in ("index.md", "cli.md", "speed.md", "more/any-cluster.md"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("# x\n")
    config = _hooks().on_config({"docs_dir": str(tmp_path), "nav": [{"Home": "index.md"}, {"Use": [{"CLI": "cli.md"}]}]})
    assert config["nav"][-1] == {"More": ["more/any-cluster.md", "speed.md"]}


def test_a_generated_part_is_written_and_an_unknown_marker_stops_the_build(monkeypatch):
    monkeypatch.delenv("MAPLE_TEMPLATES_DIR", raising=False)  # the hook drops it: the site shows the bundled library
    hooks, page = _hooks(), SimpleNamespace(file=SimpleNamespace(src_uri="x.md"))
    written = hooks.on_page_markdown("<!-- maple: known errors count --> known failures", page, {}, None)
    assert re.fullmatch(r"\d{3,} known failures", written)
    with pytest.raises(ValueError, match="unknown marker"):
        hooks.on_page_markdown("<!-- maple: clusters tabel -->", page, {}, None)
