# osprey's front door. `make demo` and `make check` work on a fresh Debian 12
# machine: they install what is missing (scripts/bootstrap.sh), fetch the
# models and media (scripts/fetch-assets.sh), build, and run.

SANITIZE ?=
WERROR   ?= ON
JEMALLOC ?= ON
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
# ONNX Runtime is not built with TSan; its own synchronisation is suppressed
TSAN_ENV := TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp halt_on_error=1 exitcode=66"

.PHONY: all build deps assets install check check-tsan unit e2e fuzz format-check layout-check format demo bench bench-track bench-peer bench-fleet bench-frigate bench-cascade bench-cameras soak soak-doors clean help

all: build

help:
	@echo "make          build osprey into $(BUILD)/bin"
	@echo "make demo     set up, fetch the default model and media, detect people in vtest.avi"
	@echo "make check    set up and run every test (SANITIZE=address for ASan+UBSan)"
	@echo "make check-tsan  the threaded parts (unit tests, ospreyd end to end) under TSan"
	@echo "make fuzz     every fuzz target (tests/fuzz/README.md), FUZZ_SECONDS each (default 60)"
	@echo "make format-check  list the C files clang-format (.clang-format) would change (part of check)"
	@echo "make layout-check  the server's map: no cycle among its files, each folder within its layer (part of check)"
	@echo "make format   lay out every tracked C file by .clang-format"
	@echo "make bench    benchmarks against the raw libraries and runtime"
	@echo "make bench-track  detect on video (tracked) vs --one-look and --per-frame: runs a frame, frames/s, F1 (vtest, still clips); MOTA/IDF1 vs a naive IoU linker"
	@echo "make bench-fleet  ospreyd --jobs workers on a local redis-server: loss under SIGKILL, overhead, scale-out"
	@echo "make bench-cameras  N RTSP copies of vtest into one ospreyd vs N osprey detect: frames kept, CPU and RSS per camera"
	@echo "make bench-frigate  ospreyd --zmq under 1-4 Frigate detector clients: latency vs its 200 ms"
	@echo "make bench-cascade  one cascade request vs the host cropping and sending each object itself"
	@echo "make bench-peer  ospreyd next to the Python pool worker it replaces (root; PEER_WORKER=its inference_pool.py)"
	@echo "make install  PREFIX=/usr/local (default) [DESTDIR=…]: binaries, ONNX Runtime, catalog models,"
	@echo "              the systemd unit and its user, an example config (docs/operations.md)"
	@echo "make soak     SOAK_REQUESTS (default 1000000) mixed requests with model churn: RSS, threads, fds"
	@echo "make soak-doors  every door at once for SOAK_DOORS_S (default 600) s: pipe, socket, HTTP, Frigate,"
	@echo "              the fleet, model churn; nothing unanswered, counters adding up per door, RSS within 1.05"
	@echo "make clean    remove build output"

# Installs missing packages and ONNX Runtime; remembers where ONNX Runtime is.
deps:
	@mkdir -p $(BUILD)
	@scripts/bootstrap.sh | tail -n 1 | sed -n 's/^ONNXRUNTIME_ROOT=//p' > $(BUILD)/.ort-root.tmp
	@test -s $(BUILD)/.ort-root.tmp || { echo "make: scripts/bootstrap.sh did not report ONNX Runtime" >&2; exit 1; }
	@mv $(BUILD)/.ort-root.tmp $(BUILD)/.ort-root

# the int8 models are made by the osprey binary of this build (osprey quantize)
assets:
	@OSPREY_BIN=$(abspath $(BUILD))/bin scripts/fetch-assets.sh

build: deps
	@cmake -S . -B $(BUILD) -DONNXRUNTIME_ROOT="$$(cat $(BUILD)/.ort-root)" \
	    -DOSPREY_WERROR=$(WERROR) -DOSPREY_SANITIZE=$(SANITIZE) -DOSPREY_JEMALLOC=$(JEMALLOC) > $(BUILD)/cmake.log || \
	    { cat $(BUILD)/cmake.log; exit 1; }
	@cmake --build $(BUILD) -j $(JOBS)

# The installed tree finds ONNX Runtime and the models relative to its
# bin/, so PREFIX is only written into the systemd unit.
PREFIX ?= /usr/local
install: build
	@DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(abspath $(PREFIX))"

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The end-to-end suite and the tools' tests, on the binaries of $(BUILD), the
# ONNX Runtime it was built with and the models and media of $(OSPREY_CACHE)
# ($(TEST_JOBS) tests at a time: most of a test's time is waiting for a peer;
# then the tests marked serial, whose peer keeps its own deadline, one at a time).
TEST_JOBS ?= $(JOBS)
PYTEST = OSPREY_SANITIZE=$(SANITIZE) OSPREY_BIN=$(abspath $(BUILD))/bin \
    OSPREY_ORT_DIR="$$(cat $(BUILD)/.ort-root)" $(PY) tools/pytest2.py $(TEST_JOBS) -q -p no:cacheprovider --durations=25
E2E_TESTS := tests/e2e tools/test_tflite2onnx.py tools/test_quantize.py tools/test_threshold.py tools/test_layers.py tools/test_trackeval.py tools/test_deblur.py

e2e: build assets
	$(PYTEST) $(E2E_TESTS)

check: build assets
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(PYTEST) $(E2E_TESTS)
ifeq ($(SANITIZE),)
	@$(MAKE) --no-print-directory format-check
	@$(MAKE) --no-print-directory layout-check
	@$(MAKE) --no-print-directory fuzz
endif

# libFuzzer (clang) over every parser a peer reaches. One binary per
# target, each run for FUZZ_SECONDS on its committed seeds
# (tests/fuzz/corpus/<target>/) and what earlier runs found ($(BUILD)/fuzz/corpus-<target>).
# Every target links src/wire/; FUZZ_SRC_<t> and FUZZ_LIBS_<t> add the rest.
FUZZ_TARGETS := wire json cmds image http frigate zones jobs redis eventdb mjpeg
FUZZ_WHAT_wire := the wire codec (frames, payloads, peeks, encoders, replies)
FUZZ_WHAT_json := the startup config and command JSON, the config's models
FUZZ_WHAT_cmds := the commands' arguments (open_stream, register_shm, unregister_shm, index, model config)
FUZZ_WHAT_image := JPEG and PNG decode through src/image/decode.c
FUZZ_WHAT_http := the HTTP door's routes, %00 check, Bearer header, bind spec, metric labels and quantiles
FUZZ_WHAT_frigate := Frigate's zmq detector protocol (headers, tensors, rows, labelmaps)
FUZZ_WHAT_zones := the zones file, then tracked objects through its zones and lines
FUZZ_WHAT_jobs := a fleet job's fields and the --jobs URL
FUZZ_WHAT_redis := Redis replies read with a bound (what a lying server sends)
FUZZ_WHAT_eventdb := /api/events's and /api/crossings' parameters and an event id of its snapshots
FUZZ_WHAT_mjpeg := an MJPEG stream's parts, in pieces, through the mpjpeg demuxer with the --max-frame bound
# the model config's parsers, and the decoders (a cascade asks what a decoder gives)
FUZZ_MODEL_SRC := src/base/text.c src/model/config.c src/model/cascade.c src/model/catalog.c src/model/paths.c src/image/prep.c src/image/geom.c src/image/buffer.c \
    src/post/*.c
FUZZ_SRC_json := $(FUZZ_MODEL_SRC)
FUZZ_LIBS_json := -lyuv
FUZZ_SRC_cmds := $(FUZZ_MODEL_SRC)
FUZZ_LIBS_cmds := -lyuv
FUZZ_DICT_json := tests/fuzz/json.dict
FUZZ_DICT_cmds := tests/fuzz/json.dict
FUZZ_SRC_image := src/image/decode.c src/image/buffer.c
FUZZ_LIBS_image := -lturbojpeg -lpng -lz
FUZZ_SRC_zones := src/base/text.c src/track/zonefile.c src/track/zones.c src/track/tracker.c src/track/kalman.c src/track/assign.c
FUZZ_DICT_zones := tests/fuzz/zones.dict
FUZZ_SRC_jobs := src/jobs/job.c
FUZZ_DICT_jobs := tests/fuzz/jobs.dict
FUZZ_SRC_redis := src/jobs/bounded.c
FUZZ_LIBS_redis := -lhiredis
FUZZ_DICT_redis := tests/fuzz/redis.dict
FUZZ_SRC_eventdb := src/eventdb/eventdb.c src/eventdb/query.c src/log/log.c src/base/clock.c
FUZZ_LIBS_eventdb := -D_GNU_SOURCE -lsqlite3 -lpthread # _GNU_SOURCE: as CMake builds it (its writer names its thread)
FUZZ_SRC_mjpeg := src/video/video.c src/video/url.c src/base/clock.c src/image/buffer.c src/image/yuv.c
FUZZ_LIBS_mjpeg := -lavformat -lavcodec -lavdevice -lswscale -lavutil -lyuv -lpthread
FUZZ_DICT_mjpeg := tests/fuzz/mjpeg.dict
.SECONDEXPANSION:
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/*.h src/wire/*.c src/wire/*.h $$(FUZZ_SRC_$$*)
	@mkdir -p $(dir $@)
	clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	    -Isrc $< src/wire/*.c $(FUZZ_SRC_$*) -lcjson $(FUZZ_LIBS_$*) -lm -o $@

# JOBS targets at a time, each for its own FUZZ_SECONDS; every target runs
# even when one finds something, and make fails if any did.
fuzz: deps $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
	@$(MAKE) --no-print-directory -k -j $(JOBS) --output-sync=target $(FUZZ_TARGETS:%=fuzz-run-%)

fuzz-run-%: $(BUILD)/fuzz/fuzz_%
	@mkdir -p $(BUILD)/fuzz/corpus-$*
	@echo "fuzz_$*: $(FUZZ_SECONDS) s of libFuzzer over $(FUZZ_WHAT_$*)"
	@$(BUILD)/fuzz/fuzz_$* $(if $(FUZZ_DICT_$*),-dict=$(FUZZ_DICT_$*)) -max_total_time=$(FUZZ_SECONDS) \
	    -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/$*- $(BUILD)/fuzz/corpus-$* tests/fuzz/corpus/$* \
	    > $(BUILD)/fuzz/$*.log 2>&1; rc=$$?; \
	tail -n 14 $(BUILD)/fuzz/$*.log; \
	if [ $$rc -ne 0 ]; then \
	    echo "fuzz_$*: FINDING (exit $$rc), see $(BUILD)/fuzz/$*.log and the $(BUILD)/fuzz/$*-crash-* file"; \
	fi; exit $$rc

# Layout of the tracked C sources against .clang-format; reformats nothing
# (`make format` does).
format-check:
	@scripts/format-check.sh

# The server's map (docs/architecture.md): no cycle among its files, and
# each folder includes only what its layer may see.
layout-check:
	@$(PY) tools/callgraph.py src/server
	@$(PY) tools/layers.py src/server

format:
	@git ls-files -z -- '*.c' '*.h' | xargs -0 clang-format -i --style=file

# The threaded parts under ThreadSanitizer: unit tests and ospreyd end to end.
check-tsan: assets
	@$(MAKE) --no-print-directory build SANITIZE=thread
	cd build-thread && $(TSAN_ENV) ctest --output-on-failure -j $(JOBS)
	$(TSAN_ENV) OSPREY_SANITIZE=thread OSPREY_BIN=$(abspath build-thread)/bin OSPREY_ORT_DIR="$$(cat build-thread/.ort-root)" \
	    $(PY) tools/pytest2.py $(TEST_JOBS) -q -p no:cacheprovider --durations=15 tests/e2e -k "ospreyd or test_sources"

demo: build assets
	@mkdir -p out
	$(OSPREY) detect --model ssd-oidv4-int8 --out out "$(OSPREY_CACHE)/media/vtest.avi" > out/vtest.jsonl
	@echo "first lines of out/vtest.jsonl ($$(wc -l < out/vtest.jsonl) frames, one JSON line each; the video read as"
	@echo "objects over time, each looked at again once: the model runs a frame are in the summary above):"
	@head -n 2 out/vtest.jsonl | cut -c 1-300
	@echo "annotated snapshot: $$(ls out/*-best.jpg)"
	@echo "objects named: the same video with --track, its events and a line across the walkway (docs/tracking.md)"
	@rm -rf out/snapshots && mkdir -p out/snapshots
	$(OSPREY) detect --model ssd-oidv4-int8 --quiet --track --zones docs/examples/vtest-walkway.json \
	    --snapshots out/snapshots "$(OSPREY_CACHE)/media/vtest.avi" > out/vtest-tracked.jsonl
	@$(PY) scripts/demo-summary.py out/vtest-tracked.jsonl out/snapshots

# The fleet (docs/fleet.md): 3 workers, one SIGKILLed, 2000 jobs; then Redis
# vs pipe and two workers vs one, each the median of 3 runs (bench/fleet.py).
bench-fleet: build assets
	$(PY) bench/fleet.py --bin $(abspath $(BUILD))/bin --jobs 2000 --frames 400 --runs 3

# Frigate's zmq detector (docs/frigate.md): 1-4 of its detector clients back to back; the
# round trip against Frigate's 200 ms, frames/s against ONNX Runtime's own loop (bench/frigate.py).
bench-frigate: build assets
	$(PY) bench/frigate.py --bin $(abspath $(BUILD))/bin --runs 3

# A cascade in ospreyd against the host doing it itself (boxes back, crop, JPEG-encode
# and send each crop): latency p50/p99 and CPU per frame, faces and a car (bench/cascade.py).
bench-cascade: build assets
	$(PY) bench/cascade.py --bin $(abspath $(BUILD))/bin --frames 20 --runs 5

# osprey detect on video (the default: tracked) against --one-look on vtest and on two still
# clips, in turns, and --per-frame on vtest: model runs a frame, the frames/s ratio, F1 on
# vtest's labelled frames (bench/track.py);
# then tracking quality (docs/tracking.md): MOTA, IDF1, ID switches and the zone and
# line counts against a naive IoU linker, on tools/trackclip.py's clip (bench/track_quality.py).
# Cameras per box: N RTSP copies of vtest into one ospreyd against N osprey detect processes:
# frames kept, CPU and RSS per camera, objects against one camera's (bench/cameras.py).
bench-cameras: build assets
	$(PY) bench/cameras.py --bin $(abspath $(BUILD))/bin

bench-track: build assets
	$(PY) bench/track.py --bin $(abspath $(BUILD))/bin --runs 3
	$(PY) bench/track_quality.py --bin $(abspath $(BUILD))/bin

bench: build assets bench-track
	$(BUILD)/bin/bench_image
	$(BUILD)/bin/bench_detect "$(OSPREY_CACHE)"
	$(BUILD)/bin/bench_post
	$(BUILD)/bin/bench_stream "$(OSPREY_CACHE)"
	$(BUILD)/bin/bench_quant "$(OSPREY_CACHE)"
	$(BUILD)/bin/bench_eventdb
	@$(PY) -c "import sys, pathlib; sys.path.insert(0, 'tests/e2e'); \
	    from test_segment import frame_diff_model; frame_diff_model(pathlib.Path('$(BUILD)/framediff.onnx'))"
	$(BUILD)/bin/bench_segment "$(OSPREY_CACHE)" 3 $(BUILD)/framediff.onnx
	$(PY) bench/cascade.py --bin $(abspath $(BUILD))/bin --frames 10 --runs 3
	@echo "ospreyd end to end (bench/loadgen/), each on a fresh ospreyd over pipes; f/s counts frames,"
	@echo "latency is per request, ratio = f/s / the limit (the raw ONNX Runtime run loop, best of 1 session x"
	@echo "N threads and N sessions x 1 thread, at the same batch size, measured in the same command);"
	@echo "K = requests in flight (4 = the admission capacity: 2 workers + 2 pending). Noisy shared machine:"
	@echo "compare ratios, not absolute figures; the load average is on every line."
	@$(BUILD)/bin/loadgen --brief-header
	@$(BUILD)/bin/loadgen --limit-only --model ssd-oidv4 --limit-seconds 3
	@$(BUILD)/bin/loadgen --limit-only --model ultraface --limit-seconds 3
	@$(BUILD)/bin/loadgen --brief --model ssd-oidv4 --frame raw  --runs 3 --seconds 4 --limit --limit-seconds 2
	@$(BUILD)/bin/loadgen --brief --model ssd-oidv4 --frame raw  --size 1920x1080 --runs 3 --seconds 4 --limit --limit-seconds 2
	@$(BUILD)/bin/loadgen --brief --model ssd-oidv4 --frame jpeg --size 1920x1080 --runs 3 --seconds 4 --limit --limit-seconds 2
	@$(BUILD)/bin/loadgen --brief --model ssd-oidv4 --frame shm  --size 1920x1080 --runs 3 --seconds 4 --limit --limit-seconds 2
	@$(BUILD)/bin/loadgen --brief --model ultraface --frame raw  --runs 3 --seconds 4 --limit --limit-seconds 2
	@$(BUILD)/bin/loadgen --brief --model ultraface --frame raw  --size 1920x1080 --runs 3 --seconds 4 --limit --limit-seconds 2
	@echo "the int8 catalog models (osprey quantize), each against its own limit:"
	@$(BUILD)/bin/loadgen --brief --model ssd-oidv4-int8 --frame raw  --runs 3 --seconds 4 --limit --limit-seconds 2
	@$(BUILD)/bin/loadgen --brief --model ssd-oidv4-int8 --frame raw  --size 1920x1080 --runs 3 --seconds 4 --limit --limit-seconds 2
	@$(BUILD)/bin/loadgen --brief --model ultraface-int8 --frame raw  --runs 3 --seconds 4 --limit --limit-seconds 2
	@echo "int8 against float served by the same ospreyd at 1920x1080 raw, in turns (bench/paired.py, 3 pairs;"
	@echo "A = float, B = int8; B/A > 1: int8 serves more frames, and spends less server CPU per frame):"
	@$(PY) bench/paired.py --a $(BUILD)/bin/ospreyd --b $(BUILD)/bin/ospreyd --b-model ssd-oidv4-int8 --pairs 3 \
	    --loadgen $(BUILD)/bin/loadgen -- --model ssd-oidv4 --frame raw --size 1920x1080 --seconds 4 --limit --limit-seconds 2
	@$(PY) bench/paired.py --a $(BUILD)/bin/ospreyd --b $(BUILD)/bin/ospreyd --b-model ultraface-int8 --pairs 3 \
	    --loadgen $(BUILD)/bin/loadgen -- --model ultraface --frame raw --size 1920x1080 --seconds 4 --limit --limit-seconds 2
	@echo "one frame in flight (K=1): p50-raw = p50 minus the median run of the 1-session raw loop; paired ="
	@echo "the same with one request and one raw run in turns (both see the same load), medians of 5;"
	@echo "pipe alone = the same bytes through a pipe to a thread that only reads them, in turns too:"
	@$(BUILD)/bin/loadgen --brief --model ssd-oidv4 --frame raw  --size 1920x1080 --inflight 1 --runs 5 --seconds 3 \
	    --limit --limit-seconds 2
	@$(BUILD)/bin/loadgen --brief --model ssd-oidv4 --frame shm  --size 1920x1080 --inflight 1 --runs 5 --seconds 3 \
	    --limit --limit-seconds 2
	@echo "infer_batch (batch_mode list: one stacked runtime call), ssd-oidv4 raw 300x300, 3 s each, 1 run:"
	@$(BUILD)/bin/loadgen --brief --model ssd-oidv4 --batch 1,2,4,8 --inflight 1,4,16 --runs 1 --seconds 3 \
	    --limit --limit-seconds 2
	@$(BUILD)/bin/loadgen --brief --label "overload: ssd-oidv4 raw 1920x1080 at 2x capacity" --frame raw \
	    --size 1920x1080 --mode open --rate 2x --seconds 30 --runs 3
	@echo "the server's CPU per shed frame: raw 1920x1080 frames whose deadline passed before they were sent,"
	@echo "every one shed at the gate; ratio = that CPU / the raw run's CPU per frame, measured in the same run:"
	@$(BUILD)/bin/loadgen --brief --label "shed at the gate: ssd-oidv4 raw 1920x1080" --frame raw \
	    --size 1920x1080 --deadline-ms -1000 --runs 3 --seconds 4 --limit --limit-seconds 2

# ospreyd next to the Python pool worker it replaces, run unchanged in a
# Debian 13 chroot (docs/bench.md). Needs root; not part of make check.
PEER_WORKER  ?= $(OSPREY_CACHE)/peer/inference_pool.py
PEER_RUNS    ?= 3
PEER_SECONDS ?= 5
bench-peer:
	@[ "$$(id -u)" -eq 0 ] || { echo "make bench-peer: needs root (the Python worker runs in a chroot)" >&2; exit 1; }
	@$(MAKE) --no-print-directory build assets
	@$(PY) bench/peer/compare.py --worker "$(PEER_WORKER)" --loadgen $(BUILD)/bin/loadgen \
	    --ospreyd $(BUILD)/bin/ospreyd --runs $(PEER_RUNS) --seconds $(PEER_SECONDS)

# A long mixed run with the models replaced, unloaded and loaded every
# SOAK_CHURN_S seconds, reporting memory, threads and descriptors each
# minute (docs/bench.md). glibc's allocator instead of jemalloc:
# make soak BUILD=build-glibc JEMALLOC=OFF. Niced: the machine may be
# shared. Not part of make check.
SOAK_REQUESTS  ?= 1000000
SOAK_CHURN_S   ?= 10
SOAK_NICE      ?= 10
soak: build assets
	nice -n $(SOAK_NICE) $(PY) bench/soak.py --ospreyd $(BUILD)/bin/ospreyd --requests $(SOAK_REQUESTS) \
	    --churn-s $(SOAK_CHURN_S) --json-out $(BUILD)/soak.json

# Every door at once for SOAK_DOORS_S seconds (docs/bench.md): socket and
# pipe clients, HTTP scrapes every 100 ms and event streams, Frigate's
# detectors, fleet jobs through a local redis-server, and the churn; the
# resident set at the end against 10 % of the run is a check here.
SOAK_DOORS_S ?= 600
soak-doors: build assets
	nice -n $(SOAK_NICE) $(PY) bench/soak_doors.py --bin $(abspath $(BUILD))/bin --seconds $(SOAK_DOORS_S) \
	    --churn-s $(SOAK_CHURN_S) --check-memory --json-out $(BUILD)/soak-doors.json

clean:
	rm -rf build build-address build-thread out
