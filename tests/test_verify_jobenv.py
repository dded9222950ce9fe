"""A verification job never sees a credential of the process that starts it (issue 10, finding 6):
the bot's GitHub token, the action's inputs and GitLab secrets, the model's API key, and at the
center the CI job's token and the site's id_token. Each backend runs a script that prints its whole
environment; no secret may appear in anything the run gives back."""

import os
from pathlib import Path

import pytest

from maple_ci.github.pipeline import run_backend
from maple_ci.verify.jobenv import job_environment
from maple_ci.verify.local import verify_local

MINIAPP = str(Path(__file__).parent / "cluster" / "allreduce_miniapp.py")
# Secrets as they are named where maple-ci runs: the GitHub Action's job, and a Jacamar CI job.
SECRETS = {
    "GITHUB_TOKEN": "ghs_secret-github-token",
    "INPUT_GITHUB_TOKEN": "ghs_secret-input-token",
    "INPUT_GITLAB_TRIGGER_TOKEN": "glptt-secret-input-trigger",
    "MAPLE_GITLAB_TRIGGER_TOKEN": "glptt-secret-trigger",
    "MAPLE_GITLAB_TOKEN": "glpat-secret-read",
    "MAPLE_GITLAB_URL": "https://gitlab.secret-center.example",
    "MAPLE_LLM_API_KEY": "sk-secret-llm-key",
    "ACTIONS_RUNTIME_TOKEN": "secret-actions-runtime",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "secret-actions-oidc",
    "CI_JOB_TOKEN": "glcbt-secret-job-token",
    "CI_JOB_JWT_V2": "secret-job-jwt",
    "SITE_ID_TOKEN": "secret-site-id-token",
    "SLURM_PLUGIN_TOKEN": "secret-in-an-allowed-family",
    "https_proxy": "http://alice:secret-proxy-password@proxy.example:3128",
}
PRINTS_ENV = "#!/bin/bash\n#PBS -l select=1\nenv\npython train.py\n"


def assert_no_secret(*outputs: object) -> None:
    text = "\n".join(map(str, outputs))
    leaked = [name for name, value in SECRETS.items() if value in text]
    assert not leaked, f"{leaked} leaked into the output"


def test_the_job_environment_keeps_what_a_batch_job_needs_and_no_secret():
    site = {"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "LC_ALL": "C", "SLURM_JOB_ID": "42",
            "SLURM_NTASKS": "8", "PBS_NODEFILE": "/var/spool/nodes", "http_proxy": "http://proxy:3128",
            "BASH_ENV": "/usr/share/lmod/lmod/init/bash", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert job_environment({**site, **SECRETS}) == site
    # Unknown names are left out too: an allowlist, not a guess at what a secret is called.
    assert job_environment({"DEPLOY_PASS": "x", "MYAPP_DSN": "postgres://u:p@db"}) == {}


@pytest.mark.parametrize("value", ["$(touch /tmp/pwned)", "`id`", "${HOME}/.env", "site-env.sh"])
def test_a_bash_env_that_would_run_code_or_is_relative_is_dropped(value):
    assert "BASH_ENV" not in job_environment({"BASH_ENV": value})


def test_local_backend_job_sees_no_secret(tmp_path):
    script = tmp_path / "job.pbs"
    script.write_text(PRINTS_ENV)
    result = verify_local(script, miniapp=MINIAPP, timeout=120, env={**os.environ, **SECRETS}, workdir=tmp_path)
    assert result.ok, result.message + "\n" + result.log
    assert "\nPATH=" in result.log and "\nPBS_NODEFILE=" in result.log  # the job's environment was printed
    assert_no_secret(result.model_dump())


def test_in_an_allocation_the_ci_job_token_and_id_token_stay_out_of_the_script(tmp_path, capsys):
    # As `maple verify --in-allocation` in the center's CI job, which holds CI_JOB_TOKEN and the id_token.
    script = tmp_path / "job.sbatch"
    script.write_text(PRINTS_ENV.replace("#PBS -l select=1", "#SBATCH -N 1"))
    env = {**os.environ, **SECRETS, "SLURM_JOB_ID": "4242"}
    result = verify_local(script, miniapp=MINIAPP, timeout=120, env=env, workdir=tmp_path, in_allocation=True)
    assert result.ok, result.message + "\n" + result.log
    assert "\nSLURM_JOB_ID=4242\n" in result.log
    assert_no_secret(result.model_dump(), capsys.readouterr())  # the CI job's trace (stderr) too


def test_the_bot_runs_verification_without_its_secrets(tmp_path):
    # pipeline.Pipeline hands the backend its own environment (os.environ in the action).
    outcome = run_backend("local", cluster="polaris", path="scripts/polaris/job.pbs", script=PRINTS_ENV,
                          miniapp=MINIAPP, commit="c0", committed=True, env={**os.environ, **SECRETS})
    assert outcome.ok, outcome.message + "\n" + outcome.log
    assert "\nHOME=" in outcome.log
    assert_no_secret(outcome)


# Each runs code of the caller's choosing in a job that kept it (issue 15): Lmod's `module` runs
# LMOD_SETTARG_CMD after every command, a MODULEPATH or PYTHONPATH entry in the checkout loads its
# files, CUDA loads the injection library, srun runs the task prolog.
RUNS_CODE = ("LMOD_SETTARG_CMD", "MODULEPATH", "PYTHONPATH", "LD_LIBRARY_PATH", "CUDA_INJECTION64_PATH",
             "SLURM_TASK_PROLOG", "PYTHONUSERBASE", "OMP_TOOL_LIBRARIES", "NCCL_NET_PLUGIN", "GIT_CONFIG_COUNT")


@pytest.mark.parametrize("name", RUNS_CODE)
def test_variables_that_load_or_run_code_are_not_kept(name):
    assert job_environment({name: "/checkout/evil", "PATH": "/usr/bin"}) == {"PATH": "/usr/bin"}


def test_lmod_settarg_cmd_of_the_caller_does_not_run_and_the_site_file_rebuilds_module(tmp_path):
    # The real Lmod of the test cluster (tests/cluster/setup.sh): the site's startup file, root-only,
    # gives the job `module`; a LMOD_SETTARG_CMD inherited from the CI job would run after `module list`.
    marker, evil = tmp_path / "marker", tmp_path / "settarg"
    evil.write_text(f"#!/bin/sh\ntouch {marker}\n")
    evil.chmod(0o755)
    script = tmp_path / "job.pbs"
    script.write_text("#!/bin/bash\n#PBS -l select=1\nmodule list 2>&1 && echo module-ok\npython train.py\n")
    env = {**os.environ, "BASH_ENV": "/opt/maple-test/site-env.sh", "LMOD_SETTARG_CMD": str(evil),
           "MODULEPATH": str(tmp_path)}
    result = verify_local(script, miniapp=MINIAPP, timeout=120, env=env, workdir=tmp_path)
    assert result.ok and "module-ok" in result.log, result.message + "\n" + result.log
    assert not marker.exists()
