# osprey's front door. `make demo` and `make check` work on a fresh Debian 12
# machine: they install what is missing (scripts/bootstrap.sh), fetch the
# models and media (scripts/fetch-assets.sh), build, and run.

SANITIZE ?=
WERROR   ?= ON
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
ifeq ($(SANITIZE),)
BUILD    ?= build
else
BUILD    ?= build-$(SANITIZE)
endif
export OSPREY_CACHE ?= $(HOME)/.cache/osprey
PY       := /usr/bin/python3
OSPREY   := $(BUILD)/bin/osprey
FUZZ_SECONDS ?= 60
# sanitizer runs: ONNX Runtime's own process-lifetime allocations are not ours
export LSAN_OPTIONS ?= suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1

.PHONY: all build deps assets check unit e2e demo bench clean help

all: build

help:
	@echo "make          build osprey into $(BUILD)/bin"
	@echo "make demo     set up, fetch the default model and media, detect people in vtest.avi"
	@echo "make check    set up and run every test (SANITIZE=address for ASan+UBSan)"
	@echo "make bench    benchmarks against the raw libraries and runtime"
	@echo "make clean    remove build output"

# Installs missing packages and ONNX Runtime; remembers where ONNX Runtime is.
deps:
	@mkdir -p $(BUILD)
	@scripts/bootstrap.sh | tail -n 1 | sed -n 's/^ONNXRUNTIME_ROOT=//p' > $(BUILD)/.ort-root.tmp
	@test -s $(BUILD)/.ort-root.tmp || { echo "make: scripts/bootstrap.sh did not report ONNX Runtime" >&2; exit 1; }
	@mv $(BUILD)/.ort-root.tmp $(BUILD)/.ort-root

assets:
	@scripts/fetch-assets.sh

build: deps
	@cmake -S . -B $(BUILD) -DONNXRUNTIME_ROOT="$$(cat $(BUILD)/.ort-root)" \
	    -DOSPREY_WERROR=$(WERROR) -DOSPREY_SANITIZE=$(SANITIZE) > $(BUILD)/cmake.log || \
	    { cat $(BUILD)/cmake.log; exit 1; }
	@cmake --build $(BUILD) -j $(JOBS)

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

e2e: build assets
	OSPREY_BIN=$(abspath $(BUILD))/bin $(PY) -m pytest -q -p no:cacheprovider tests/e2e tools/test_tflite2onnx.py

check: build assets
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	OSPREY_BIN=$(abspath $(BUILD))/bin $(PY) -m pytest -q -p no:cacheprovider tests/e2e tools/test_tflite2onnx.py

demo: build assets
	@mkdir -p out
	$(OSPREY) detect --model ssd-oidv4 --out out "$(OSPREY_CACHE)/media/vtest.avi" > out/vtest.jsonl
	@echo "first lines of out/vtest.jsonl ($$(wc -l < out/vtest.jsonl) frames, one JSON line each):"
	@head -n 2 out/vtest.jsonl | cut -c 1-300
	@echo "annotated snapshot: $$(ls out/*-best.jpg)"

bench: build assets
	$(BUILD)/bin/bench_image
	$(BUILD)/bin/bench_detect "$(OSPREY_CACHE)"

clean:
	rm -rf build build-address build-thread out
