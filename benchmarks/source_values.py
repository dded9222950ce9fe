"""Count the source-site values that leak into ports of the real corpus (issue 16, cause 5).

    python benchmarks/source_values.py [--list] [--scripts DIR]

Every case of tests/data/real (or every script in DIR) is ported to the bench's three targets. A port leaks a value when it
carries, live (not in a comment), something of the source's site that the target does not have:
  env        an exported source variable naming the source machine: interface names, device orders
             and affinity masks, another vendor's or site's settings (MIOPEN_*, CUDA_HOME), search
             paths, HOME/TMPDIR, proxies, or a value that is an absolute path (not $HOME/$SCRATCH/...)
  threads    OMP_NUM_THREADS other than the port's cores per rank
  account    the source's account in a live directive of another cluster's port
  container  the source's image run without a digest pin (@sha256:)
  wrapper    a per-rank wrapper outside the checkout, or a profiler's env/injection option
  argpath    a program argument that is a path on the source site's file systems, kept with no note
The detectors are written from what the issue names, apart from maple_ci/values.py, so the count
does not grade the table by itself.
"""

import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

from maple_ci.bench_real import TARGETS, load_real_cases
from maple_ci.errors import MapleError
from maple_ci.extract import extract
from maple_ci.files import read_text
from maple_ci.port import port_intent
from maple_ci.profiles import get_profile

_SITE_NAME = re.compile(r".*(IFNAME|_HCA|VISIBLE_DEVICES|AFFINITY|AFFINITY_MASK|CPU_BIND|PROXY|ENDPOINT)|"
                        r"MIOPEN_.*|ROCM_.*|HSA_.*|ZE_.*|HOME|TMPDIR|USER|CUDA_HOME|CUDA_PATH|MODULEPATH|"
                        r"PATH|LD_LIBRARY_PATH|PYTHONPATH|https?_proxy", re.I)
_PORTABLE_PATH = re.compile(r"\$\{?(HOME|SCRATCH|WORK|PWD)\b")
_EXPORT = re.compile(r"^export ([A-Za-z_]\w*)=(.*)$", re.M)
_PROFILER_OPTION = re.compile(r"^(-e|--env-var|--injection-path-64)(=|$)")


def _env_leaks(script: str, intent, profile) -> list[str]:
    if intent.source_cluster == profile.name:
        return []  # the center's own tuning, right on its own machine (issue 16 item 6)
    site = set(profile.env) | {k for s in profile.frameworks.values() for k in s.env}
    if getattr(profile, "device_order", None):  # the target's own device order, from its profile
        site.add(profile.visible_devices)
    setup = {line for s in profile.frameworks.values() for line in s.setup}
    cores = str(profile.cores_per_node // profile.devices_per_node)  # per rank: one rank per device
    leaks = []
    for name, value in _EXPORT.findall(script):
        if intent.env.get(name) != value.strip("'\"") or name in site or f"export {name}={value}" in setup:
            continue
        if name == "OMP_NUM_THREADS":
            if value.strip("'\"") != cores:
                leaks.append(f"threads {name}={value}")
        elif _SITE_NAME.fullmatch(name) and not (name.startswith("MIOPEN_") and profile.gpu_vendor == "amd") or (value.lstrip("'\"").startswith("/") and not _PORTABLE_PATH.search(value)):
            leaks.append(f"env {name}={value}")
    return leaks


def _live(script: str) -> str:
    return "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("# "))


def leaks(intent, script: str, profile) -> list[str]:
    live = _live(script)
    found = _env_leaks(live, intent, profile)
    if intent.account and intent.source_cluster != profile.name and re.search(
            rf"^#(SBATCH --account=|PBS -A ){re.escape(intent.account)}$", script, re.M):
        found.append(f"account {intent.account}")
    if intent.container and intent.container.image and "@sha256:" not in intent.container.image:
        image = intent.container.image.split("://")[-1].replace("#", "/").removeprefix("docker:")
        if image in live:
            found.append(f"container {intent.container.image}")
    named = "\n".join(line for line in script.splitlines() if line.startswith("# Note: "))
    if intent.source_cluster != profile.name:  # an argument naming a path of the source site, unnamed
        found += [f"argpath {arg}" for arg in intent.script_args
                  if re.match(r"([^=\s]*=)?/(?!tmp/|dev/shm)", arg) and arg.split("=")[-1].split("$")[0] not in named]
    for i, word in enumerate(intent.wrapper):
        outside = word.startswith("/") and not word.startswith("/tmp/") or i == 0 and word.startswith(("$", "~"))
        if (outside or _PROFILER_OPTION.match(word)) and word in live:
            found.append(f"wrapper {word}")
    return found


def _sources(argv: list[str]) -> list[tuple[str, Path, Path]]:
    """(name, script, checkout) of the real corpus, or of every script in --scripts DIR."""
    if "--scripts" in argv:
        folder = Path(argv[argv.index("--scripts") + 1])
        return [(path.name, path, folder) for path in sorted(folder.iterdir()) if path.suffix in (".sbatch", ".pbs", ".sh")]
    return [(str(c["path"].relative_to(c["group"].parent)), c["path"], c["group"]) for c in load_real_cases()]


def main(argv: list[str]) -> int:
    counts, ports, details = Counter(), 0, []
    with tempfile.TemporaryDirectory() as out:
        for name, path, checkout in _sources(argv):
            try:
                intent = extract(read_text(path, name), name, path.parent, checkout)
                results = port_intent(intent, list(TARGETS), path.name, Path(out))
            except MapleError as exc:
                details.append(f"{name}: refused: {exc}")
                continue
            for result in results:
                if not result.script:
                    continue
                ports += 1
                for leak in leaks(intent, result.script, get_profile(result.cluster)):
                    counts[leak.split()[0]] += 1
                    details.append(f"{name} -> {result.cluster}: {leak}")
    print(f"{ports} ports, {sum(counts.values())} leaked source-site values: "
          + ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())))
    if "--list" in argv:
        print("\n".join(details))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
