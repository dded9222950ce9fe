"""Write Lmod stand-in modulefiles for every module a cluster profile loads, so that `module load X`
in a generated script is a real Lmod call: a module a profile names loads (and sets
MAPLE_TEST_MODULE_<NAME>=<version>, there being no software behind it), any other fails with
Lmod's own error. A profile's module_use directories are created and hold its modules, so a script
that forgets `module use` fails as it would at the site."""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from maple_ci.profiles import load_profiles  # noqa: E402

# Modules of profiles without module_use live here; site-env.sh puts it on MODULEPATH.
DEFAULT_MODULEPATH = Path("/opt/maple-test/modulefiles")


def modulefile_text(module: str) -> str:
    name, _, version = module.partition("/")
    var = "MAPLE_TEST_MODULE_" + re.sub(r"\W", "_", name).upper()
    return (
        f'-- maple-ci test stand-in for the site module "{module}": no software behind it.\n'
        f'setenv("{var}", "{version or 1}")\n'
    )


def main() -> None:
    written = 0
    for profile in load_profiles().values():
        for setup in profile.frameworks.values():
            dirs = [Path(d) for d in setup.module_use] or [DEFAULT_MODULEPATH]
            for module in (m for entry in setup.modules for m in entry.split()):
                for directory in dirs:
                    path = directory / f"{module}.lua"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(modulefile_text(module))
                    written += 1
    DEFAULT_MODULEPATH.mkdir(parents=True, exist_ok=True)
    print(f"make_modulefiles: {written} modulefiles written")


if __name__ == "__main__":
    main()
