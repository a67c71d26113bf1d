# Two commands on a fresh machine:  make demo  |  make test
# Each installs what is missing first (Debian packages as root, then a virtualenv).
# make install  does only that; then `. .venv/bin/activate` puts `playlisteval` on the PATH (README "Using it").

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test lint system venv install bench clean

system:
	@bash scripts/ensure-system.sh

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch is pinned to the CPU build (2.13.0); an unpinned torch pulls a multi-GB CUDA build
	$(BIN)/pip install -q -e '.[dev,api]'
	@touch $(STAMP)

venv: $(STAMP)

install: system venv
	@echo "installed in $(VENV); put playlisteval on the PATH with:  . $(VENV)/bin/activate"

demo: system venv
	@bash scripts/demo.sh

test: system venv
	$(BIN)/pytest -q

lint: venv
	$(BIN)/ruff check playlisteval tests $(wildcard bench)
	$(BIN)/mypy playlisteval

bench: system venv
	$(BIN)/python -m bench
	$(BIN)/python -m bench retrieval --n 20000
	$(BIN)/python -m bench report
	$(BIN)/python -m bench batch
	$(BIN)/python -m bench steps

clean:
	rm -rf demo myproject .pytest_cache .mypy_cache .ruff_cache
