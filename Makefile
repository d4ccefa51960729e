# One command sets up and runs the main job (`make demo`); one sets up and runs the tests
# (`make test`). Both create ./.venv on first use and reinstall when pyproject.toml changes.
# `make docs` builds the documentation site into site/ (what CI builds, strictly).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
TRAIN_STAMP := $(VENV)/.installed-train
DOCS_STAMP := $(VENV)/.installed-docs

.PHONY: setup setup-train demo test docs lint format bench clean data

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@

# The `train` extra asks for a torch range; constraints.txt pins the CPU wheel of 2.13.0
# that lies on our machines (a bare range would pull a multi-GB CUDA build here).
$(TRAIN_STAMP): $(STAMP) constraints.txt
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[train,dev]'
	touch $@

# The `docs` extra: MkDocs, Material and mkdocstrings (the API reference reads src/ statically).
$(DOCS_STAMP): $(STAMP) constraints.txt
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[docs]'
	touch $@

setup: $(STAMP)

setup-train: $(TRAIN_STAMP)

demo: $(STAMP)
	$(BIN)/emts demo --out-dir emts-demo

test: $(TRAIN_STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/python -m pytest

# NO_MKDOCS_2_WARNING: Material prints a banner about MkDocs 2.0 on every build.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d site

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks

format: $(STAMP)
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_stage_ab.py

clean:
	rm -rf $(VENV) emts-demo benchmarks/out site

# The default synthetic curriculum (paper sizes) with real HIT-UAV plates: about 4 GB.
DATA ?= data
HITUAV ?= ../shared/data/hit-uav
data: $(STAMP)
	for set in tier1 bench negatives fpbench; do \
		$(BIN)/emts synth $$set --out $(DATA)/$$set --hituav $(HITUAV) || exit 1; \
	done
	du -sh $(DATA)/*
