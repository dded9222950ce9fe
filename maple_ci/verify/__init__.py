"""Verification agent: static checks (static.py) and backends that really run a mini-app through a
generated script (slurm.py on a Slurm cluster, local.py emulating a scheduler, jacamar.py on a
center's GitLab runner)."""
