# The Roofline Course. Quick start: `make book`, then `make test`. See README.md.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON_BOOT ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
BUILD  := _build/html
JB_STRICT := --all -W -n --keep-going

.PHONY: help install browser book test unit nbval build-strict site-test lab-test record lab serve grade gpu-check clean

help:
	@echo "make book     install if needed, execute every notebook, build the site into $(BUILD)"
	@echo "make test     install if needed, then unit tests + nbval over every notebook + strict book build"
	@echo "              + the site in a real browser with no network (installs Debian's chromium if missing)"
	@echo "make lab      open the course in JupyterLab: chapters and exercises open as notebooks"
	@echo "make serve    serve the built site on http://127.0.0.1:8000"
	@echo "make grade    grade your answers in exercises/"
	@echo "make clean    remove the build and the notebook execution cache"

$(PY):
	@echo "==> creating $(VENV) with $(PYTHON_BOOT)"
	$(PYTHON_BOOT) -m venv $(VENV)

# Reinstall whenever the pins or the package metadata change.
$(STAMP): requirements.txt pyproject.toml | $(PY)
	@echo "==> installing the pinned environment (requirements.txt); first time takes a few minutes"
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (roofline course)" >/dev/null
	@touch $@

# JupyterLab settings: .md files open as notebooks (jupytext), news and update checks off.
# Binder installs the same file through postBuild.
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json
$(LAB_SETTINGS): lab/overrides.json | $(STAMP)
	install -D -m 644 $< $@

install: $(STAMP) $(LAB_SETTINGS)

# The site test drives Debian's chromium through the playwright package (pinned in
# requirements.txt); it never downloads a browser of its own (no `playwright install`).
CHROMIUM_APT := DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "==> installing Debian's chromium for the site test"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update && $(CHROMIUM_APT); \
	  else sudo apt-get update && sudo $(CHROMIUM_APT); fi; }

book: $(STAMP)
	$(VENV)/bin/jupyter-book build . --keep-going
	@echo
	@echo "==> The site is built. Open $(CURDIR)/$(BUILD)/index.html in a browser, or run 'make serve'."

unit: $(STAMP)
	$(PY) -m pytest tests -q --ignore=tests/test_site.py --ignore=tests/test_lab.py

nbval: $(STAMP)
	$(PY) -m pytest --nbval-lax --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg -q notebooks exercises solutions

build-strict: $(STAMP)
	$(VENV)/bin/jupyter-book build . $(JB_STRICT)

# The built site in chromium, offline: needs _build/html (make book or make build-strict first).
site-test: $(STAMP) browser
	ROOFLINE_SITE_REQUIRED=1 $(PY) -m pytest tests/test_site.py -q

test: $(STAMP) $(LAB_SETTINGS) browser
	@echo "==> 1/5 unit tests"
	$(PY) -m pytest tests -q --ignore=tests/test_site.py --ignore=tests/test_lab.py
	@echo "==> 2/5 nbval over every notebook"
	$(PY) -m pytest --nbval-lax --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg -q notebooks exercises solutions
	@echo "==> 3/5 strict book build (any warning or failing cell fails)"
	$(VENV)/bin/jupyter-book build . $(JB_STRICT)
	@echo "==> 4/5 the built site in chromium, with every request to another host refused"
	ROOFLINE_SITE_REQUIRED=1 $(PY) -m pytest tests/test_site.py -q
	@echo "==> 5/5 a chapter and an exercise in JupyterLab, in chromium: Run All, numbers as on the site"
	ROOFLINE_SITE_REQUIRED=1 $(PY) -m pytest tests/test_lab.py -q

# Re-write the reference records that strict nbval compares against (after changing such a notebook).
record: $(STAMP)
	@for rec in $$(cd tests/records && find . -name '*.ipynb' | sed 's|^\./||; s|\.ipynb$$|.md|'); do \
	  $(PY) tests/record_outputs.py $$rec; done

# The chapters (notebooks/), the exercises (exercises/) in JupyterLab, from the repository root.
lab: $(STAMP) $(LAB_SETTINGS)
	$(VENV)/bin/jupyter lab

# JupyterLab in chromium: a chapter and an exercise open as notebooks, run, and show the site's numbers.
lab-test: $(STAMP) $(LAB_SETTINGS) browser
	$(PY) -m pytest tests/test_lab.py -q


serve: $(STAMP)
	@test -f $(BUILD)/index.html || { echo "no site yet: run 'make book' first"; exit 2; }
	$(PY) -m http.server --bind 127.0.0.1 --directory $(BUILD) 8000

grade: $(STAMP)
	$(VENV)/bin/roofline grade exercises/*.md

# CUDA machines only: re-run every notebook on the GPU, measure its ceilings, time the Triton
# demos, and write book/data/measurements/<gpu>.json (exit 2 with a reason where there is no GPU).
gpu-check: $(STAMP)
	$(PY) tools/gpu_check.py

clean:
	rm -rf _build .jupyter_cache
