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

.PHONY: all venv lab-up lab-down lab-status demo lint test unit clean-venv
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

lab-up: venv
	"$(VENV)/bin/slurm-gpu" lab up

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

test: lint lab-up
	"$(PY)" -m pytest tests $(PYTEST_ARGS)

unit: lint
	"$(PY)" -m pytest tests -m 'not slurm' $(PYTEST_ARGS)

clean-venv:
	rm -rf "$(VENV)"
