# Two entry points on a fresh machine: `make demo` (the main job, offline) and `make test`.
PYTHON ?= python3
EXAMPLE ?= examples/perlmutter_torchrun_ddp.sbatch

.PHONY: install demo test

install:
	# CPU build of PyTorch first, so sentence-transformers does not pull the CUDA one.
	$(PYTHON) -m pip install --quiet torch==2.13.0
	$(PYTHON) -m pip install --quiet -e '.[test]'

demo: install
	maple port $(EXAMPLE) --to all --out scripts

test: install
	bash tests/cluster/setup.sh
	npm ci --prefix tests/github --ignore-scripts --no-audit --no-fund --loglevel=error
	$(PYTHON) -m pytest
