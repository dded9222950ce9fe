"""The center side of maple-ci's jacamar verification, installed with maple-ci so that a center runs
the gate it reviewed (`python -I -m maple_ci.center`, console script `maple-center-check`):
gate.py checks a request and runs it, checkout.py fetches and copies the commit, options.py derives
the scheduler options. workflows/gitlab/README.md describes what it trusts and why."""
