# SPDX-License-Identifier: Apache-2.0
# The README's two commands:  make demo  |  make test   (run as root; they install what is missing)
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
# Debian's own python3: the lab user runs gpusub with this venv's interpreter (a /root/... interpreter
# such as pyenv's is not readable by other users). A private checkout (a clone in /root, mode 700) is
# fine: the lab then runs a world-readable copy of it from $LAB_DIR/runtime (docs/lab.md).
SYSPY ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || command -v python3)
STAMP := $(VENV)/.slurm-gpu-installed
PYTEST_ARGS ?=

.PHONY: all venv lab-up lab-down lab-status demo lint test test-here test-fidelity-plain unit clean-venv
all: test

$(STAMP): setup.cfg pyproject.toml
	@if [ -x "$(PY)" ] && [ "$$(id -u)" = 0 ] && ! runuser -u nobody -- "$$(readlink -f $(PY))" -c '' 2>/dev/null; then \
	  echo "make: $(VENV) uses $$(readlink -f $(PY)), which the lab user cannot run; recreating it with $(SYSPY)"; \
	  rm -rf "$(VENV)"; fi
	@if ! "$(SYSPY)" -c 'import venv, ensurepip' 2>/dev/null; then \
	  echo "make: installing python3-venv"; apt-get update -q >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-venv >/dev/null; fi
	@[ -x "$(PY)" ] || "$(SYSPY)" -m venv "$(VENV)"
	"$(PY)" -m pip install -q --disable-pip-version-check --config-settings editable_mode=compat -e '.[test]'
	@# byte-code for the checkout, as pip writes it for an installed package (an editable install has
	@# none, and PYTHONDONTWRITEBYTECODE=1 would keep it so; gpusub's start-up then compiles every module)
	"$(PY)" -m compileall -q slurm_gpu
	@touch "$@"

venv: $(STAMP)

# Package sets (slurm_gpu/lab/install.py PACKAGE_SETS): the demo needs only the lab's own ("demo"); the
# test command adds a C compiler (the NVML stand-in) and headless chromium (the report's test).
LAB_PACKAGES ?= demo
lab-up: venv
	"$(VENV)/bin/slurm-gpu" lab up --packages $(LAB_PACKAGES)

lab-down: venv
	"$(VENV)/bin/slurm-gpu" lab down

lab-status: venv
	"$(VENV)/bin/slurm-gpu" lab status

demo: lab-up
	"$(VENV)/bin/slurm-gpu" lab demo

# ruff (lint rules in pyproject.toml) and mypy (strict on the pure core, setup.cfg); runs before the tests.
lint: venv
	"$(VENV)/bin/ruff" check slurm_gpu tests benchmarks
	"$(VENV)/bin/mypy" slurm_gpu

# A private clone (say /root/slurm-gpu, /root mode 700): the lab user and slurmd execute this checkout's
# venv, node hooks (slurm-gpu-task-prolog) and the MPS/NVML stand-ins, which they cannot reach there. As
# root, `make test` then runs the suite from a world-readable copy in $(READABLE_COPY) (under /var/lib,
# where no user can plant a name; one per checkout; its .venv is kept between runs). `make test-here`
# skips the check.
READABLE_COPY ?= /var/lib/slurm-gpu/checkout-$(shell printf %s "$(CURDIR)" | sha1sum | cut -c1-12)
TESTS ?= tests
test:
	@if [ "$$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 && ! runuser -u nobody -- test -r "$(CURDIR)/setup.cfg" 2>/dev/null; then \
	  echo "make test: $(CURDIR) is not readable by other users (the lab user, slurmd); running from a copy in $(READABLE_COPY)"; \
	  mkdir -p "$(READABLE_COPY)" && chmod 755 "$$(dirname "$(READABLE_COPY)")" "$(READABLE_COPY)" && \
	  find "$(READABLE_COPY)" -mindepth 1 -maxdepth 1 ! -name .venv -exec rm -rf {} + && \
	  tar -C "$(CURDIR)" --exclude=./.venv -cf - . | tar -C "$(READABLE_COPY)" -xf - && \
	  chmod -R a+rX "$(READABLE_COPY)" && \
	  exec $(MAKE) -C "$(READABLE_COPY)" test-here TESTS='$(TESTS)' PYTEST_ARGS='$(PYTEST_ARGS)'; \
	fi; \
	exec $(MAKE) test-here TESTS='$(TESTS)' PYTEST_ARGS='$(PYTEST_ARGS)'

test-here: LAB_PACKAGES = demo,test,browser
test-here: lint lab-up
	"$(PY)" -m pytest $(TESTS) $(PYTEST_ARGS)
	@if [ "$(TESTS)" = tests ]; then $(MAKE) --no-print-directory test-fidelity-plain; fi

# The side-by-side corpus runs twice (tests/fidelity/README.md): in the lab with the compiled job_submit.lua
# (the whole suite), then in a second lab of plain Slurm (`lab up --no-job-submit`, its own directory and
# ports), the reference a site without the plugin has.
PLAIN_LAB_DIR ?= /tmp/slurm-gpu-lab-plain
PLAIN_LAB_PORT_BASE ?= 26817

test-fidelity-plain: venv
	SLURM_GPU_LAB_DIR=$(PLAIN_LAB_DIR) SLURM_GPU_LAB_PORT_BASE=$(PLAIN_LAB_PORT_BASE) SLURM_GPU_LAB_JOB_SUBMIT=0 "$(VENV)/bin/slurm-gpu" lab up
	rc=0; SLURM_GPU_LAB_DIR=$(PLAIN_LAB_DIR) SLURM_GPU_LAB_PORT_BASE=$(PLAIN_LAB_PORT_BASE) SLURM_GPU_LAB_JOB_SUBMIT=0 \
	  "$(PY)" -m pytest tests/fidelity -m slurm -q -p no:cacheprovider || rc=$$?; \
	  SLURM_GPU_LAB_DIR=$(PLAIN_LAB_DIR) SLURM_GPU_LAB_PORT_BASE=$(PLAIN_LAB_PORT_BASE) "$(VENV)/bin/slurm-gpu" lab down; exit $$rc

unit: lint
	"$(PY)" -m pytest tests -m 'not slurm' $(PYTEST_ARGS)

clean-venv:
	rm -rf "$(VENV)"
