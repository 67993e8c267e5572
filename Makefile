# Two entry points (see README): `make demo` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/arbiter demo

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q -n auto --dist loadfile

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy

bench: $(VENV)/.installed
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/harness_throughput.py
	$(BIN)/python bench/http_client.py
	$(BIN)/python bench/metrics_speed.py
	$(BIN)/python bench/jury_speed.py
	$(BIN)/python bench/online_overhead.py
	$(BIN)/python bench/summedits_eval.py
	$(BIN)/python bench/scorer_speed.py
	$(BIN)/python bench/trajectory_speed.py
	$(BIN)/python bench/judge_panel.py
	$(BIN)/python bench/server_load.py
	$(BIN)/python bench/ui_pages.py

clean:
	rm -rf $(VENV) .arbiter .pytest_cache .mypy_cache .ruff_cache
