# The login environment of the maple-ci test cluster, as a site provides it to batch jobs: Lmod's
# `module` command over the stand-in modulefiles (make_modulefiles.py) and the test stand-in for
# `conda` (bin/conda). Jobs get it through BASH_ENV, which bash sources in every non-interactive
# shell (the batch script, each `srun bash -c`); tests/conftest.py sets BASH_ENV for its jobs.
# Nested shells keep what the outer one set, e.g. a `module use` of the batch script.
: "${MODULEPATH:=/opt/maple-test/modulefiles}"
export MODULEPATH
. /usr/share/lmod/lmod/init/bash
maple_test_bin=$(cd "$(dirname "${BASH_SOURCE[0]}")/bin" && pwd)
case ":$PATH:" in *":$maple_test_bin:"*) ;; *) export PATH="$maple_test_bin:$PATH" ;; esac
unset maple_test_bin
