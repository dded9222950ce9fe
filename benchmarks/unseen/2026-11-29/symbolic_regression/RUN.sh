#!/bin/bash
# one design run on JUWELS Booster; the overrides are one argument, split by the job script
sbatch --nodes=4 --account=projectnucleus --partition=develbooster --time=1:00:00 slurm_launch_juwels.sh "experiment.session_name=design_model
experiment.experiment_name=test_1024-12
model.model_dim=1024
model.n_layers=12
optim.lr=0.0003"
