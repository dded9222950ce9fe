# The login environment of the maple-ci test cluster, as a site provides it to batch jobs: Lmod's
# `module` command and the test stand-in for `conda`. Jobs get it through BASH_ENV (bash sources
# it in every non-interactive shell: the batch script and each `srun bash -c`); see
# tests/conftest.py, which sets BASH_ENV, MODULEPATH and PATH for the jobs it submits.
. /usr/share/lmod/lmod/init/bash
