# Targets assume the Debian packages are there (./run.sh installs them first).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.ncnn_c-setup

.PHONY: setup demo test test-slow lint bench native capi wheel clean

# the native builders skip their work when their outputs are newer than their inputs
setup: $(STAMP) native capi

# the editable install compiles the native extensions in place (setup.py's build_ext);
# `native` below then finds them current and only rebuilds after a source change
$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

native capi: $(STAMP)

native:
	$(PY) -m ncnn_c._native.build_shaderc
	$(PY) -m ncnn_c._native.build_hash
	$(PY) -m ncnn_c._native.build_cpu
	$(PY) -m ncnn_c._native.build_plan
	$(PY) -m ncnn_c._native.build_int8
	$(PY) -m ncnn_c._native.build_winograd
	$(PY) -m ncnn_c._native.build_llm
	$(PY) -m ncnn_c._native.build_nonfinite

capi:
	$(PY) -m ncnn_c.capi --build

demo: setup
	$(PY) examples/squeezenet.py --cold-warm

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: setup lint
	$(PY) -m pytest -q -m "not slow"

# exit status 5 means no test carries the mark: nothing to run is not a failure
test-slow: setup
	$(PY) -m pytest -q -m slow || [ $$? -eq 5 ]

bench: setup
	$(PY) examples/bench_cold_warm.py

# a manylinux wheel with the native extensions and the C API kit, into dist/: pip builds a
# linux_<arch> wheel into build/wheel, auditwheel checks its native libraries against the
# manylinux policies and writes the retagged wheel (the newest glibc a symbol needs decides the tag)
wheel: $(STAMP)
	rm -rf build/wheel
	$(PY) -m pip wheel . --no-deps -w build/wheel
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/auditwheel repair -w dist build/wheel/ncnn_c-*.whl

clean:
	rm -rf $(VENV) build dist capi/build ncnn_c/_native/*.so models/*.vkcache
