#!/bin/bash

set -e
set -u

# the generator wrote one job script per configuration; submit the first one, away from the login-like node
sbatch -x lcpunode02 jobscripts/slurm_numeric_0001.sh
