"""Classes of wrong first edits and misplaced error lines the held-out set of 2026-11-29 showed
(issue 27): a memory request no node satisfies, an interface NCCL cannot find that the script names,
a pinned module Lmod cannot load, prerequisites loaded on the module's own line, and a wrapper's
summary line ahead of the cause it prints. Inputs are written in styles the cases do not use."""

import pytest

from maple_ci import debug
from maple_ci.bench_debug import meets
from maple_ci.debug.edits import loaded_modules
from maple_ci.debug.logs import locate


def first_ops(script: str, log: str) -> list[dict]:
    found = debug.diagnose(script, log, cluster=None)
    return [op.model_dump() for op in found.candidates[0].ops] if found.candidates else []


# --------------------------------------------------------------------------------------------
# Where the error is


def test_ncclS_last_error_line_is_the_cause_of_its_internal_check():
    log = ("[rank1]: NCCL INFO NCCL_SOCKET_IFNAME set to bond7\n"
           "[rank1]: ncclInternalError: Internal check failed.\n[rank1]: Last error:\n"
           "[rank1]: ncclSocketInit: connecting to address  with family 0 is neither AF_INET(2) nor AF_INET6(10)\n")  # fmt: skip
    failure = locate(log)
    assert failure.line.endswith("Internal check failed.")
    assert "ncclSocketInit: connecting to address" in failure.exception


def test_pyxis_printed_log_file_gives_the_cause_of_a_failed_container_start():
    log = ("slurmstepd: error: pyxis: container start failed with error code: 1\n"
           "slurmstepd: error: pyxis: printing contents of log file ...\n"
           "slurmstepd: error: pyxis:     [ERROR] No such file or directory: /lus/images/ngc-24.03.sqsh\n"
           "slurmstepd: error: pyxis: couldn't start container\n")  # fmt: skip
    assert "[ERROR] No such file or directory: /lus/images" in locate(log).exception


def test_a_line_that_only_mentions_last_error_in_prose_does_not_move_the_cause():
    log = "RuntimeError: CUDA error: invalid device ordinal\nThe last error was printed above.\n"
    assert locate(log).exception is None


# --------------------------------------------------------------------------------------------
# First edits


MEMORY = ("sbatch: error: Memory specification can not be satisfied\n"
          "sbatch: error: Batch job submission failed: Requested node configuration is not available\n")  # fmt: skip
PINNED = ('Lmod has detected the following error:  These module(s) or extension(s) exist but cannot be loaded as requested:\n'
          '"cmake/3.18.2"\n   Try: "module spider cmake/3.18.2" to see how to load the module(s).\n')  # fmt: skip


@pytest.mark.parametrize(
    "script, log, first",
    [
        # Memory no node has: all of a node's memory (--mem=0), no size to look up.
        ("#!/bin/bash\n#SBATCH -N 4\n#SBATCH --gres=gpu:a100:4\n#SBATCH --mem=1500G\nsrun ./train\n", MEMORY,
         [{"op": "set_directive", "name": "--mem", "value": "0"}]),
        # A pinned module Lmod lists no way to load: its default version.
        ("#!/bin/bash\n#SBATCH -N 1\nmodule load cmake/3.18.2\n./build.sh\n", PINNED,
         [{"op": "replace_text", "old": "module load cmake/3.18.2", "new": "module load cmake"}]),
    ],
)  # fmt: skip
def test_the_first_edit_of_the_class_is_the_one_that_needs_no_guess(script, log, first):
    assert first_ops(script, log) == first


def test_an_interface_the_script_names_is_replaced_by_one_the_nodes_have_before_it_is_dropped():
    script = "#!/bin/bash\n#SBATCH -N 2\nexport NCCL_SOCKET_IFNAME=ens9f0\nsrun python fit.py\n"
    log = "NCCL WARN ncclSocketInit: connecting to address 10.4.0.2<3311> with family 0 is neither AF_INET(2) nor AF_INET6(10)\n"
    found = debug.diagnose(script, log, cluster=None)
    assert [op.op for op in found.candidates[0].ops] == ["export_env"]
    assert found.candidates[0].find  # the interface is the site's: how to find it is said
    assert [op.op for op in found.candidates[1].ops] == ["unset_env"]


def test_lmods_listed_options_still_win_over_the_default_version():
    script = "#!/bin/bash\nmodule load netcdf/4.9.2\n./run\n"
    log = ('Lmod has detected the following error:  These module(s) or extension(s) exist but cannot be loaded as requested:\n'
           '"netcdf/4.9.2"\n   Try: "module spider netcdf/4.9.2" to see how to load the module(s).\n'
           '   Or load any one of these options:\n      module load intel/2024.1 netcdf/4.9.2\n')  # fmt: skip
    assert first_ops(script, log)[0]["new"] == "module load intel/2024.1 netcdf/4.9.2"


# --------------------------------------------------------------------------------------------
# The bench's reading of module loads


def test_loaded_modules_reads_load_add_and_ml_lines_only():
    script = "module purge\nmodule use /opt/mf\nmodule load a/1 b\nml c\nmodule add d/2\necho module load e\n"
    assert loaded_modules(script) == {"a/1", "b", "c", "d/2"}


def test_expected_module_loads_are_met_by_a_script_that_newly_loads_them():
    script = "module load hpc/1.1\nmodule load upp/10\n./run\n"
    patched = "module load hpc/1.1\nmodule load bacio w3nco upp/10\n./run\n"
    expected = [{"op": "add_module", "name": "bacio"}, {"op": "add_module", "name": "w3nco"}]
    ops = [{"op": "replace_text", "old": "upp/10", "new": "bacio w3nco upp/10"}]
    assert meets(expected, ops, script, patched)
    assert not meets(expected, ops, script, "module load hpc/1.1\nmodule load bacio upp/10\n./run\n")
    # A module the script already loaded is no load the candidate made.
    assert not meets([{"op": "add_module", "name": "hpc/1.1"}], ops, script, patched)
