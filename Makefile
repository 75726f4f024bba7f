# The Roofline Course. Quick start: `make book`, then `make test`. See README.md.
SHELL := /bin/bash
.DEFAULT_GOAL := help
# The parts of `test` run one after the other (site-test reads what build-strict wrote).
.NOTPARALLEL:
# Python caches bytecode here even where the shell sets PYTHONDONTWRITEBYTECODE (this project's own
# machines do): every kernel, grader worker and test process imports the package and the tests, and
# compiling them again in each one cost a fresh clone's `make test` about 40 s. (The grader's kernels
# still write nothing: it sets the variable for them.)
unexport PYTHONDONTWRITEBYTECODE

PYTHON_BOOT ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
BUILD  := _build/html
# jupyter-book 1.x's build with Sphinx reading (and so executing) two pages at a time, every warning
# an error, nitpicky, keep going (tools/build_book.py); --all reads every page again.
BUILD_JOBS ?= 2
JB_STRICT := --all --jobs $(BUILD_JOBS)
# The same checks on the pages that changed since the last build (`make book` after a chapter edit).
JB_CHANGED := --jobs $(BUILD_JOBS)

# How long each part took: a part writes its seconds to $(TIMES)/log, and `make book` and `make test`
# print the parts that ran at their end (then start the next run's list afresh).
TIMES := _build/.times
define begin_part
@mkdir -p $(TIMES) && date +%s.%N > $(TIMES)/$(1).begin
endef
define end_part
@awk -v b="$$(cat $(TIMES)/$(1).begin)" -v e="$$(date +%s.%N)" 'BEGIN { printf "  %-14s %6.1f s\n", "$(1)", e - b }' >> $(TIMES)/log
endef
define print_parts
@if [ -f $(TIMES)/log ]; then echo "==> $(1), seconds per part:"; cat $(TIMES)/log; rm -f $(TIMES)/log; fi
endef

.PHONY: help install install-sandbox lock browser book test times-afresh lint unit nbval build-strict site-test lab-test browser-tests record lab serve grade gpu-check fake-gpu fake-gpu+nbval clean

help:
	@echo "make book        install if needed, execute every chapter, build the site into $(BUILD)"
	@echo "make test        install if needed, then every part below, in this order:"
	@echo "  make lint        ruff (lint and format check), the layer contract (lint-imports), actionlint"
	@echo "  make unit        the library's tests (pytest tests/, CPU only)"
	@echo "  make build-strict  the book built with every chapter and exercise executed once;"
	@echo "                   any warning, broken reference or failing cell fails"
	@echo "  make fake-gpu+nbval  fake-gpu and nbval as one part, side by side:"
	@echo "    make fake-gpu    every chapter on the GPU path, with a simulated H200"
	@echo "    make nbval       the solutions re-executed, and strict nbval against tests/records/"
	@echo "  make browser-tests  site-test and lab-test, side by side:"
	@echo "    make site-test   the built site in chromium with no network"
	@echo "    make lab-test    a chapter and an exercise run in JupyterLab, in chromium"
	@echo "                   (the browser tests install Debian's chromium-headless-shell if it is missing)"
	@echo "make lab         open the course in JupyterLab: chapters and exercises open as notebooks"
	@echo "make serve       serve the built site on http://127.0.0.1:8000"
	@echo "make grade       grade your answers in exercises/"
	@echo "make install-sandbox  install Debian's bubblewrap, the grader's sandbox (make unit does it)"
	@echo "make record      re-write the strict nbval records in tests/records/"
	@echo "make lock        regenerate requirements.txt from requirements.in (pip-compile)"
	@echo "make gpu-check   on a CUDA machine: measure its roofs and write a record"
	@echo "make clean       remove the build"

$(PY):
	@echo "==> creating $(VENV) with $(PYTHON_BOOT)"
	$(PYTHON_BOOT) -m venv $(VENV)

# Reinstall whenever the pins or the package metadata change.
$(STAMP): requirements.txt pyproject.toml | $(PY)
	@echo "==> installing the pinned environment (requirements.txt); first time takes a few minutes"
	$(call begin_part,install)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -r requirements.txt
	$(PY) -m pip install --quiet --no-compile --no-deps -e .
	@# Bytecode for the environment, on every core: pip compiles on one, which was a third of the
	@# install (a graded kernel writes none, so what is not compiled here it compiles on every start).
	@# Not the packages' own tests nor pip, which nothing the course runs imports: 15 % of the
	@# source, and 27 s -> 20 s on 2 cores. (One torch test helper, for Python 3.12, does not compile here.)
	@$(PY) -m compileall -q -j 0 -x '/tests?/|/site-packages/pip/' \
	  $$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') >/dev/null || true
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (roofline course)" >/dev/null
	@# The tests' bytecode as well: pytest rewrites each test module's asserts and caches the result
	@# in tests/__pycache__. With nothing cached, each of `make unit`'s test processes rewrote every
	@# module itself (some 5 s of CPU each, with four at once); collecting once here caches them all.
	@# (A test module that does not import fails in `make test`, not here.)
	@$(PY) -m pytest --collect-only -q tests >/dev/null 2>&1 || true
	$(call end_part,install)
	@touch $@

# JupyterLab settings: .md files open as notebooks (jupytext), news and update checks off.
# The server's contents manager (roofline_lib/present/lab_contents.py): jupytext's, and a chapter opens
# unmodified. Binder installs the same two files through postBuild.
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json
LAB_SERVER := $(VENV)/etc/jupyter/jupyter_server_config.json
LAB_SETTINGS := $(LAB_OVERRIDES) $(LAB_SERVER)
$(LAB_OVERRIDES): lab/overrides.json | $(STAMP)
	install -D -m 644 $< $@
$(LAB_SERVER): lab/jupyter_server_config.json | $(STAMP)
	install -D -m 644 $< $@

install: $(STAMP) $(LAB_SETTINGS)

# requirements.txt is generated from requirements.in: edit the short list, then run this.
# torch is pinned without a local version, so the CPU build (2.13.0+cpu) and the CUDA build
# both satisfy the lock; the lock names no package index.
lock: | $(PY)
	CUSTOM_COMPILE_COMMAND="make lock" $(VENV)/bin/pip-compile --quiet --no-emit-index-url --no-emit-trusted-host --no-emit-find-links \
	  --strip-extras --output-file requirements.txt requirements.in
	sed -i 's/^torch==\([0-9.]*\)+[a-z0-9]*/torch==\1/' requirements.txt

# The browser tests drive Debian's chromium-headless-shell (chromium's engine without the desktop
# browser; tests/headless_chromium.py says what it saves) through the playwright package (pinned in
# requirements.txt); they never download a browser of their own (no `playwright install`).
CHROMIUM_APT := DEBIAN_FRONTEND=noninteractive apt-get install -y chromium-headless-shell
browser:
	@command -v chromium-headless-shell >/dev/null 2>&1 || { \
	  echo "==> installing Debian's chromium-headless-shell for the browser tests"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update && $(CHROMIUM_APT); \
	  else sudo apt-get update && sudo $(CHROMIUM_APT); fi; }

# The grader runs every student's notebook in a bubblewrap sandbox (roofline_lib/grading/sandbox.py);
# a class is not graded without one. Installed like chromium, from Debian's package.
BWRAP_APT := DEBIAN_FRONTEND=noninteractive apt-get install -y bubblewrap
install-sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  echo "==> installing Debian's bubblewrap for the grader's sandbox"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update && $(BWRAP_APT); \
	  else sudo apt-get update && sudo $(BWRAP_APT); fi; }

# The book is built strictly (any warning, broken reference or failing cell fails), and every chapter
# and exercise is executed once. The build is a file target: it runs again only when a source of the
# site (a chapter, an exercise, a page, the library, the configuration) or the environment changed
# since the last build that passed, so `make test` right after `make book` reuses that build.
BOOK_SOURCES := $(wildcard $(shell git ls-files --cached --others --exclude-standard -- \
  _config.yml _toc.yml jupytext.toml references.bib book notebooks exercises roofline_lib 2>/dev/null || \
  find _config.yml _toc.yml jupytext.toml references.bib book notebooks exercises roofline_lib -type f -not -path '*/.*'))
BOOK_OK := _build/.strict-build-passed
# What every page depends on: a change here executes every chapter again (--all). A change to
# chapters, exercises or pages alone rebuilds only those (Sphinx re-reads what changed: seconds for
# one chapter). A fresh clone has no _build, so CI always builds everything from nothing.
BOOK_ALL_INPUTS := $(STAMP) _config.yml _toc.yml jupytext.toml references.bib \
  $(filter roofline_lib/% book/_ext/%,$(BOOK_SOURCES))
BOOK_ALL_OK := _build/.all-inputs-built
# A page changed since the last build that passed is touched before the build, so Sphinx reads it
# again even if a failed build read it since (a failing chapter keeps failing until it is fixed).
$(BOOK_OK): $(STAMP) $(BOOK_SOURCES)
	@rm -f $@
	@mkdir -p _build
	$(call begin_part,book-build)
	@if [ -f $(BOOK_ALL_OK) ] && [ -d $(BUILD) ] && \
	    [ -z "$$(find $(BOOK_ALL_INPUTS) -newer $(BOOK_ALL_OK) 2>/dev/null | head -n 1)" ]; then \
	  changed="$$(find $(filter-out $(BOOK_ALL_INPUTS),$(BOOK_SOURCES)) -newer $(BOOK_ALL_OK) 2>/dev/null | tr '\n' ' ')"; \
	  echo "==> rebuilding what changed since the last build that passed: $${changed:-nothing}"; \
	  [ -z "$$changed" ] || touch $$changed; \
	  touch _build/.build-started; \
	  $(PY) tools/build_book.py $(JB_CHANGED); \
	else \
	  echo "==> the library, configuration or environment changed (or no build yet): executing every page"; \
	  touch _build/.build-started; \
	  $(PY) tools/build_book.py $(JB_STRICT); \
	fi
	@mv _build/.build-started $(BOOK_ALL_OK)
	$(call end_part,book-build)
	@touch $@

book: $(BOOK_OK)
	$(call print_parts,make book)
	@echo
	@echo "==> The site is built. Open $(CURDIR)/$(BUILD)/index.html in a browser, or run 'make serve'."

# ---------------------------------------------------------------- the parts of `make test`
# Each part is a target of its own; `test` only lists them. Every chapter and exercise is
# executed once per run on the CPU path, by the strict build; nbval executes what the book does
# not (the solutions) and the chapters that have a strict reference record; fake-gpu runs the
# chapters' GPU branches (the cells a CPU run skips) against a simulated GPU.

lint: $(STAMP)
	$(call begin_part,lint)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/actionlint
	$(call end_part,lint)

# Test processes: two per core, at most 4 (pytest-xdist). Much of a test's time is spent waiting (a
# grading test on its sandboxed kernels, a kernel on its start), so one process per core left the
# cores idle: on 2 cores the unit tests took 172 s in 2 processes and 107 s in 4 (the same tests, the
# machine shared with other work both times). `make unit JOBS=1` runs in one process.
JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( 2 * n > 4 ? 4 : 2 * n )))
XDIST = $(if $(filter-out 0 1,$(JOBS)),-n $(JOBS))

# Work several tests share (the graded class) is done once per run (the `once_per_run` fixture in
# conftest.py), whichever process asks first. A process that runs out of tests takes some of the
# other's (worksteal): the grading tests take seconds each and would otherwise end the run on one
# core. Tests marked `measures` time this machine (against roofs measured on it, or a time budget):
# they run afterwards, with no other test process beside them (in `make test`, one part later).
# The second run collects only the files that use the mark (collecting every test takes ~15 s).
UNIT = $(PY) -m pytest -q
MEASURING := $(shell grep -l 'mark\.measures' tests/test_*.py 2>/dev/null)
MEASURES = $(if $(MEASURING),$(UNIT) -m measures $(MEASURING),true)
# In `make test` the files of BESIDE_LIVE run later, in fake-gpu+nbval, on the core the live chapters
# leave free, and the measuring tests after the live chapters, on theirs (MEASURES_LATER; see there);
# `make unit` on its own runs every file, then the measuring tests alone.
unit: $(STAMP) install-sandbox
	$(call begin_part,unit)
	$(UNIT) tests --ignore=tests/test_site.py --ignore=tests/test_lab.py $(BESIDE_LIVE:%=--ignore=%) $(XDIST) $(if $(XDIST),--dist worksteal) -m "not measures"
	$(call end_part,unit)
	$(if $(MEASURES_LATER),@echo "==> the tests that time this machine run later: in fake-gpu+nbval after the live chapters")
	$(if $(MEASURES_LATER),,$(call begin_part,measures))
	$(if $(MEASURES_LATER),,$(MEASURES))
	$(if $(MEASURES_LATER),,$(call end_part,measures))

# Chapters with a reference record in tests/records/ are compared output by output.
RECORDED := $(patsubst tests/records/%.ipynb,%.md,$(shell find tests/records -name '*.ipynb' 2>/dev/null))
# A notebook's cells run in order in one kernel, so each notebook stays whole on one worker.
# A kernel silent for 30 s at start is replaced (conftest.py); one starts in ~1 s.
NBVAL = $(PY) -m pytest --nbval-current-env --nbval-kernel-startup-timeout 30 -q
NBVAL_SOLUTIONS = $(NBVAL) $(1) --nbval-lax solutions
# What the recorded run compares, for the progress line.
RECORDED_SAID = $(if $(RECORDED), and$(COMMA) strictly$(COMMA) $(RECORDED))
COMMA := ,
NBVAL_RECORDED = $(if $(RECORDED),$(NBVAL) --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg $(RECORDED),true)

# $(call side_by_side,NAME,COMMAND,NAME,COMMAND): both commands at once (one after the other on a
# single core), each one's output printed whole once both are done; fails if either failed.
SIDE_LOGS := _build/.side
define side_by_side
@mkdir -p $(SIDE_LOGS); rc=0; \
if [ "$$(nproc 2>/dev/null || echo 1)" -ge 2 ]; then \
  ( $(2) ) > $(SIDE_LOGS)/$(1).log 2>&1 & first=$$!; \
  ( $(4) ) > $(SIDE_LOGS)/$(3).log 2>&1 || rc=1; \
  wait $$first || rc=1; \
else \
  ( $(2) ) > $(SIDE_LOGS)/$(1).log 2>&1 || rc=1; \
  ( $(4) ) > $(SIDE_LOGS)/$(3).log 2>&1 || rc=1; \
fi; \
for log in $(1) $(3); do echo "==> $$log"; cat $(SIDE_LOGS)/$$log.log; done; exit $$rc
endef

# The solutions and the recorded chapters side by side (neither times anything): 8 s, not 10.
nbval: $(STAMP)
	$(call begin_part,nbval)
	@echo "==> nbval: the solutions$(RECORDED_SAID), side by side"
	$(call side_by_side,solutions,$(call NBVAL_SOLUTIONS,$(XDIST) $(if $(XDIST),--dist loadfile)),recorded,$(NBVAL_RECORDED))
	$(call end_part,nbval)

build-strict: $(BOOK_OK)
	@echo "==> the strict build is up to date with its sources: $(BUILD)"

# The built site in chromium, offline (builds it first where it is out of date).
site-test: $(BOOK_OK) browser
	ROOFLINE_SITE_REQUIRED=1 $(PY) -m pytest tests/test_site.py -q

# JupyterLab in chromium: a chapter and an exercise open as notebooks, run, and show the site's numbers.
lab-test: $(STAMP) $(LAB_SETTINGS) browser
	ROOFLINE_SITE_REQUIRED=1 $(PY) -m pytest tests/test_lab.py -q

# Both browser tests, side by side: the Lab test mostly waits (on its one renderer, on the Jupyter
# server: 55 core-seconds in 56 s alone), so on 2 cores the pair took 75 s, against 98 s one after
# the other (site 42 s, Lab 56 s alone; one run each, in the headless shell). One test process per
# file; `make browser-tests JOBS=1` runs them one after the other.
browser-tests: $(BOOK_OK) $(LAB_SETTINGS) browser
	$(call begin_part,browser-tests)
	ROOFLINE_SITE_REQUIRED=1 $(PY) -m pytest tests/test_site.py tests/test_lab.py -q $(if $(XDIST),-n 2 --dist loadfile)
	$(call end_part,browser-tests)

# The parts in order (the browser tests read the site build-strict wrote); run serially.
TEST_PARTS := lint unit build-strict fake-gpu+nbval browser-tests
test: times-afresh $(TEST_PARTS)
	$(call print_parts,make test)
	@echo "==> make test: all parts passed ($(TEST_PARTS))"

# numpy's OpenBLAS starts a thread per core when numpy is imported, and they spin: about 0.12 s of
# CPU in every process that imports numpy (`import numpy`, 10 runs each: 293 ms of CPU, 170 ms with
# one thread). The book and the tests start hundreds of such processes (kernels, test workers, the
# grader's, the CLI's) and none times numpy's linear algebra: the CPU roofs the chapters read are
# torch's, on MKL and OpenMP, which this does not touch. `make lab` keeps numpy's default.
book test $(TEST_PARTS) nbval fake-gpu site-test lab-test record: export OPENBLAS_NUM_THREADS = 1

# A part run on its own (`make unit`) leaves its time in the list; `make test` starts a new one.
times-afresh:
	@rm -f $(TIMES)/log

# Re-write the reference records that strict nbval compares against (after changing such a notebook).
record: $(STAMP)
	@for rec in $$(cd tests/records && find . -name '*.ipynb' | sed 's|^\./||; s|\.ipynb$$|.md|'); do \
	  $(PY) tests/record_outputs.py $$rec; done

# The chapters (notebooks/), the exercises (exercises/) in JupyterLab, from the repository root.
lab: $(STAMP) $(LAB_SETTINGS)
	$(VENV)/bin/jupyter lab

serve: $(STAMP)
	@test -f $(BUILD)/index.html || { echo "no site yet: run 'make book' first"; exit 2; }
	$(PY) -m http.server --bind 127.0.0.1 --directory $(BUILD) 8000

grade: $(STAMP)
	$(VENV)/bin/roofline grade exercises/*.md

# CUDA machines only: re-run every notebook on the GPU, measure its ceilings, time the Triton
# demos, read a GEMM's and a copy's energy on NVML's counter, and write
# book/data/measurements/<gpu>.json (exit 2 with a reason where there is no GPU).
gpu-check: $(STAMP)
	$(PY) tools/gpu_check.py

# The GPU path without a GPU: every chapter under nbval with a simulated H200 in each kernel
# (tests/fakegpu, inert unless ROOFLINE_FAKE_GPU is set); no CPU work may meet a GPU roof. The
# exercises import neither torch nor anything that does, so they have no GPU path (a unit test checks).
# The chapters that judge timings against roofs read on this CPU ("live") run one at a time (two at
# once would skew each other's roofs), in one process; the others ("quiet") one at a time in a second
# process beside them (tests/test_fake_gpu_chapters.py), as the book build runs its pages.
FAKE_GPU = ROOFLINE_FAKE_GPU_NOTEBOOKS=1 $(PY) -m pytest tests/test_fake_gpu_chapters.py -q -k
fake-gpu: $(STAMP)
	$(call begin_part,fake-gpu)
	$(call side_by_side,fake-gpu-live,$(FAKE_GPU) "every_chapter and live",fake-gpu-quiet,$(FAKE_GPU) "every_chapter and quiet")
	$(call end_part,fake-gpu)

# `make test` runs fake-gpu and nbval as one part: the quiet chapters take about half as long as
# the live ones, and nbval's notebooks (which time nothing) run after them, in the same process,
# while the live chapters still run: on 2 cores 54 s, against 63 s one part after the other. That
# side still finished ~14 s before the live one, so `make test` also runs there a few unit test files
# that work in one process and time nothing (BESIDE_LIVE, left out of its unit part): ~14 CPU-seconds
# that the unit part, which keeps both cores busy, no longer spends.
# The measuring tests (MEASURES_LATER) follow the live chapters on their side, as a part of their own
# they kept the other core idle for ~11 s. They time against roofs they read themselves, as the live
# chapters do beside the quiet ones; they passed 4 runs of 4 beside a process that streamed memory on
# and off (random bursts of 0.1-0.8 s of a 400 MB copy). So BESIDE_LIVE grew by the ~10 s that adds.
# Then the quiet side still ended ~12 s before the live one (live 84 s, quiet 72 s, one run on a
# fresh clone), and test_explorer_js.py (11.6 s and 11.9 CPU-s in one process) joined it.
# Since the chapters' kernels run torch on one thread (THREADS in tests/test_fake_gpu_chapters.py)
# the two sides end together: live 39 s and the measuring tests 8 s, the quiet side 51 s (one run).
# The measuring tests run there on their share of the cores, as the live chapters' kernels do: on
# torch's default of a thread per core a parallel region waits for the thread that has no core
# (build_book.kernel_threads, whose rule this reads, for two at once). Beside the quiet chapters the
# live TPOT test's decode steps took 2.7 to 216 times the model on its roofs on two threads, and
# 1.6 to 3.0 on one (4 readings of 2 steps in each of 2 runs per setting, interleaved; its band is 0.5-25).
SHARE_THREADS = $(shell $(PY) -c "import os, runpy; print(runpy.run_path('tools/build_book.py')['kernel_threads'](2, os.cpu_count()))")
BESIDE_LIVE_FILES := tests/test_explorer.py tests/test_plots.py tests/test_bad_input.py tests/test_explorer_js.py
test: BESIDE_LIVE = $(BESIDE_LIVE_FILES)
test: MEASURES_LATER = 1
fake-gpu+nbval: $(STAMP)
	$(call begin_part,fake-gpu+nbval)
	@echo "==> fake-gpu, the live chapters$(if $(MEASURES_LATER), then the tests that time this machine); beside them the quiet chapters, then nbval: the solutions$(RECORDED_SAID)$(if $(BESIDE_LIVE),$(COMMA) then $(BESIDE_LIVE))"
	$(call side_by_side,fake-gpu-live,rc=0; $(FAKE_GPU) "every_chapter and live" || rc=1; $(if $(MEASURES_LATER),OMP_NUM_THREADS=$${OMP_NUM_THREADS:-$(SHARE_THREADS)} $(MEASURES) || rc=1;) exit $$rc,fake-gpu-quiet+nbval,rc=0; $(FAKE_GPU) "every_chapter and quiet" || rc=1; $(call NBVAL_SOLUTIONS,) || rc=1; $(NBVAL_RECORDED) || rc=1; $(if $(BESIDE_LIVE),$(UNIT) -m "not measures" $(BESIDE_LIVE) || rc=1;) exit $$rc)
	$(call end_part,fake-gpu+nbval)

clean:
	rm -rf _build .jupyter_cache
