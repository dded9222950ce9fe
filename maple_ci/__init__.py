"""maple-ci: make deep-learning launch scripts portable across HPC GPU clusters."""

__version__ = "0.1.0"
