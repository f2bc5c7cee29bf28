# Two commands do all set-up on a fresh clone:
#   make quickstart   # builds .venv, then runs the main job on the embedded default (toy world, tiny model)
#   make test         # builds .venv, then runs the test suite offline on CPU
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
OUT ?= runs/quickstart

.PHONY: quickstart test lint clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	# torch first and pinned: anything that resolves a newer torch pulls a multi-GB CUDA build
	$(PY) -m pip install torch==2.13.0
	$(PY) -m pip install -e '.[dev]'
	touch $(STAMP)

quickstart: $(STAMP)
	$(PY) -m train.quickstart --out $(OUT)

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) runs
