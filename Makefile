# fencegate build.  Targets: all check check-deploy unit integration js-deps py-client lint check-deps check-circles
# fuzz fuzz-smoke bench bench-scale fault-long fault-bypass fault-cond deps run demo clean.  Sources, unit
# tests (tests/unit/**/*_test.c) and fuzz targets (tests/fuzz/*_fuzz.c) are found by glob.
#
#   make deps                      install Debian packages (root)
#   make                           build/fencegate
#   make check                     deploy/ rules and dashboard, unit + integration tests
#   make js-deps                   npm packages of the JS client tests, into build/js
#   make js-unit                   the JS worker library's unit tests (node --test)
#   make js-client                 the JS worker library from `npm pack`, installed into build/jsclient
#   make go-client                 the Go worker library, its example and test worker into build/go; go test
#   make SAN=address,undefined check   the same under sanitizers (in build/san)
#   make SAN=thread check          under ThreadSanitizer (in build/tsan): the unit tests and an
#                                  integration subset (TSAN_INTEGRATION)

PKGS    := libevent libevent_openssl libcurl openssl jansson lmdb expat
LLHTTP_SRC_DIR ?= /usr/share/llhttp
LLHTTP_INC_DIR ?= /usr/share/include/llhttp
PYTHON  ?= /usr/bin/python3

ifdef SAN
ifneq (,$(findstring thread,$(SAN)))
BUILD   ?= build/tsan
else
BUILD   ?= build/san
endif
else
BUILD   ?= build
endif

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror -Wshadow -Wcast-align -Wwrite-strings -Wformat=2 \
           -Wstrict-prototypes -Wmissing-prototypes -Wvla
BASEFLAGS := -std=c11 -D_DEFAULT_SOURCE -I. -I$(LLHTTP_INC_DIR) $(shell pkg-config --cflags $(PKGS))
ALLFLAGS = $(CFLAGS) $(BASEFLAGS) -MMD -MP
LDLIBS  += $(shell pkg-config --libs $(PKGS)) -lpthread
ifdef SAN
ALLFLAGS += -fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=$(SAN)
# ThreadSanitizer does not model a lone atomic_thread_fence (store/store.c's
# read_raced pairs it with seq_cst atomics, which it does model): gcc warns.
ifneq (,$(findstring thread,$(SAN)))
ALLFLAGS += -Wno-tsan
endif
endif

MODULES   := common store election gateway
LIB_SRCS  := $(filter-out gateway/cli/main.c,$(wildcard common/*.c store/*.c election/*.c gateway/*/*.c))
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
LLHTTP_OBJS := $(patsubst %,$(BUILD)/obj/llhttp/llhttp_%.o,api http llhttp)
LIB       := $(BUILD)/libfencegate.a
BIN       := $(BUILD)/fencegate

UNIT_SRCS := $(shell find tests/unit -name '*_test.c' 2>/dev/null | sort)
UNIT_BINS := $(UNIT_SRCS:%.c=$(BUILD)/%)
BENCH_SRCS := $(wildcard tests/bench/*_bench.c)
BENCH_BINS := $(BENCH_SRCS:%.c=$(BUILD)/%)
HELPER_SRCS := $(wildcard tests/helpers/*.c)
HELPER_BINS := $(HELPER_SRCS:%.c=$(BUILD)/%)
PRELOAD_SRCS := $(wildcard tests/helpers/preload/*.c)
PRELOAD_LIBS := $(PRELOAD_SRCS:%.c=$(BUILD)/%.so)

.PHONY: all check check-deploy unit integration integration-tsan integration-one-loop js-deps js-client js-unit py-client go-client lint check-deps check-circles fuzz fuzz-smoke bench bench-proxy bench-request-cost bench-proxy-rgw bench-cond \
        bench-cores bench-cores-kit \
        bench-windows bench-stays-up bench-scale \
        fault-long fault-bypass fault-cond deps run demo clean format lint-refs install install-files uninstall deb

all: $(BIN) $(HELPER_BINS) $(PRELOAD_LIBS) $(BUILD)/tests/bench/sink_origin

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) $(WARN) -c -o $@ $<

# fencegate_build_info{commit}: the commit built, "unknown" outside a git tree.
# The stamp file changes only with the commit, so metrics_render.o is rebuilt then.
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
$(BUILD)/commit.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(GIT_COMMIT)' | cmp -s - $@ || echo '$(GIT_COMMIT)' > $@
$(BUILD)/obj/gateway/base/metrics_render.o: ALLFLAGS += -DFENCEGATE_COMMIT='"$(GIT_COMMIT)"'
$(BUILD)/obj/gateway/base/metrics_render.o: $(BUILD)/commit.stamp
.PHONY: FORCE
FORCE:

# llhttp is compiled from Debian's node-llhttp sources, never copied here.
$(BUILD)/obj/llhttp/llhttp_%.o: $(LLHTTP_SRC_DIR)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) -w -c -o $@ $<

$(LIB): $(LIB_OBJS) $(LLHTTP_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(BUILD)/obj/gateway/cli/main.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Unit tests: one binary per tests/unit/**/x_test.c, linked against the
# archive so a test that #includes a .c (to reach its statics) simply does not
# pull that member.
$(BUILD)/tests/unit/%: tests/unit/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) $(WARN) -Wno-missing-prototypes -DFENCEGATE_TESTDATA_DIR='"$(CURDIR)/tests/data"' \
	  $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS) -lcmocka

$(BUILD)/tests/bench/%: tests/bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) $(WARN) -Wno-missing-prototypes $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# The benchmarks' sink origin: no sanitizers (recv with MSG_TRUNC returns the
# bytes the kernel dropped, more than the buffer it never writes, which
# AddressSanitizer's recv takes for an overflow) and no library.
$(BUILD)/tests/bench/sink_origin: tests/bench/sink_origin.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=c11 -D_DEFAULT_SOURCE $(WARN) -Wno-missing-prototypes -o $@ $< -lpthread

$(BUILD)/tests/helpers/%: tests/helpers/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) $(WARN) -Wno-missing-prototypes $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# LD_PRELOAD shims for fault tests (a slow disk): shared objects, built
# without sanitizers so they can be preloaded into a sanitized gateway.
$(BUILD)/tests/helpers/preload/%.so: tests/helpers/preload/%.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=c11 -fPIC -shared $(WARN) -Wno-missing-prototypes -o $@ $< -ldl

# Under ThreadSanitizer, check is the unit tests and the integration tests
# where the gateway's threads meet, each gateway on two event loops
# (conftest.py): the cross-loop tests, the store's writer thread and its
# completions (fenced writes, the barrier, refusals waiting for their audit
# commit, kill -9 around a commit), the access log's writer, and /metrics.
# The long runs marked slow are left out: about 60 s here.  Every integration
# test under TSan would not fit in CI.
# A data race in the gateway's log fails the test (conftest.py).
TSAN_INTEGRATION := tests/integration/test_workers.py tests/integration/test_accept.py \
  tests/integration/test_fencing.py tests/integration/test_reload.py \
  tests/integration/test_audit_durable.py \
  tests/integration/test_access_log.py tests/integration/test_metrics.py

# Under a sanitizer, check is what it instruments: the unit tests and the
# integration tests.  The worker libraries' own unit tests (Python, JS, Go)
# and deploy/'s rules run no fencegate code, so they run once, in plain check.
ifneq (,$(findstring thread,$(SAN)))
check: unit integration-tsan
else ifneq (,$(SAN))
check: unit integration
else
check: check-deploy unit js-unit integration
endif

# The integration suite runs every gateway with two event loops (conftest.py,
# DESIGN "Worker loops"); this runs it with one, as `workers: 1` or a
# one-CPU machine serves.  CI runs the sanitizer pass this way.
integration-one-loop:
	FG_TEST_WORKERS=1 $(MAKE) integration

integration-tsan: $(BIN) $(HELPER_BINS) $(PRELOAD_LIBS)
	FENCEGATE_BIN=$(CURDIR)/$(BIN) FENCEGATE_BUILD=$(CURDIR)/$(BUILD) \
	  $(PYTHON) -m pytest -p no:cacheprovider -q -ra --durations=5 -m 'not slow' $(PYTEST_XDIST) $(TSAN_INTEGRATION) $(PYTEST_ARGS)

# deploy/'s alerting rules (promtool check + test rules) and Grafana dashboard
# (queries parse, name only exported metrics); needs Debian's prometheus.
check-deploy:
	$(PYTHON) tests/deploy/check_deploy.py

unit: $(UNIT_BINS)
	@tests/run-unit.sh $(UNIT_BINS)

# The Python worker library (clients/python), installed the supported offline
# way into a fresh venv that sees Debian's botocore; its own unit tests run
# against that install.  The integration tests' workers use the venv's python.
PYVENV    := $(BUILD)/pyvenv
PY_SRCS   := $(wildcard clients/python/pyproject.toml clients/python/fencegate/*.py)
PY_STAMP  := $(PYVENV)/.fencegate-installed
py-client: $(PY_STAMP)
	AWS_EC2_METADATA_DISABLED=true $(PYVENV)/bin/python -m pytest -p no:cacheprovider -q \
	  clients/python/tests

$(PY_STAMP): $(PY_SRCS)
	rm -rf $(PYVENV) clients/python/build clients/python/fencegate.egg-info
	$(PYTHON) -m venv --system-site-packages $(PYVENV)
	$(PYVENV)/bin/pip install --no-build-isolation --no-index --disable-pip-version-check \
	  --quiet ./clients/python
	touch $@

# The Go worker library (clients/go), built offline in GOPATH mode against
# Debian's golang-github-aws-aws-sdk-go-v2-dev (/usr/share/gocode): the package
# is copied to build/go/gopath/src/fencegate; its example and the integration
# tests' worker (tests/go/worker) are built from it into build/go, and its
# unit tests run (go test).  The build cache, build/gocache, is shared with the SAN build.
GO_DIR    := $(BUILD)/go
GO_WORKER := $(GO_DIR)/fencegate-test-worker
GO_SRCS   := $(shell find clients/go tests/go -type f 2>/dev/null)
GO_ENV    := GO111MODULE=off GOPROXY=off GOFLAGS= GOTOOLCHAIN=local \
             GOPATH=$(CURDIR)/$(GO_DIR)/gopath:/usr/share/gocode GOCACHE=$(CURDIR)/build/gocache
go-client: $(GO_WORKER)
	@cd $(GO_DIR)/gopath/src/fencegate && $(GO_ENV) go test -v -count=1 . > $(CURDIR)/$(GO_DIR)/test.log 2>&1; \
	  rc=$$?; grep -E '^(--- FAIL|FAIL|panic:)' -A20 $(CURDIR)/$(GO_DIR)/test.log; \
	  echo "go unit: $$(grep -c '^--- PASS' $(CURDIR)/$(GO_DIR)/test.log) passed," \
	    "$$(grep -c '^--- FAIL' $(CURDIR)/$(GO_DIR)/test.log) failed" \
	    "($$(sed -n 's/^\(ok\|FAIL\)[[:space:]]*fencegate[[:space:]]*//p' $(CURDIR)/$(GO_DIR)/test.log))"; \
	  exit $$rc
$(GO_WORKER): $(GO_SRCS)
	@command -v go >/dev/null || { echo "go-client: no go (make deps installs Debian's golang-go)"; exit 1; }
	rm -rf $(GO_DIR)/gopath/src/fencegate && mkdir -p $(GO_DIR)/gopath/src
	cp -r clients/go $(GO_DIR)/gopath/src/fencegate
	cd $(GO_DIR)/gopath/src/fencegate && $(GO_ENV) go vet ./... && $(GO_ENV) go build ./... && \
	  $(GO_ENV) go build -o $(CURDIR)/$(GO_DIR)/example-worker ./examples/worker
	$(GO_ENV) go build -o $(CURDIR)/$(GO_WORKER) ./tests/go/worker

# The integration tests drive the Python and Go worker libraries: plain check
# runs their unit tests first (py-client, go-client), a sanitizer build only
# builds them.
ifneq (,$(SAN))
INTEGRATION_CLIENTS := $(PY_STAMP) $(GO_WORKER)
else
INTEGRATION_CLIENTS := py-client go-client
endif
# The integration tests wait far more than they compute (about 15 % of two
# CPUs busy, run one at a time): pytest-xdist runs them PYTEST_JOBS at a time,
# a file per process (--dist loadfile keeps a file's module fixtures and its
# order), each process with its own RGW.  PYTEST_JOBS=1 runs them in one.
PYTEST_JOBS ?= 2
PYTEST_XDIST = $(if $(filter-out 0 1,$(PYTEST_JOBS)),-n $(PYTEST_JOBS) --dist loadfile)
integration: $(BIN) $(HELPER_BINS) $(PRELOAD_LIBS) $(BUILD)/tests/bench/sink_origin js-deps js-client $(INTEGRATION_CLIENTS)
	FENCEGATE_BIN=$(CURDIR)/$(BIN) FENCEGATE_BUILD=$(CURDIR)/$(BUILD) FENCEGATE_PYVENV=$(CURDIR)/$(PYVENV) \
	  FENCEGATE_JSCLIENT=$(CURDIR)/$(JSC_DIR) FENCEGATE_GOWORKER=$(CURDIR)/$(GO_WORKER) \
	  $(PYTHON) -m pytest -p no:cacheprovider -q -ra --durations=12 $(PYTEST_XDIST) tests/integration $(PYTEST_ARGS)

# npm packages the JS client tests drive, pinned by tests/js/package-lock.json,
# installed into the build tree (never into the repository).
JS_STAMP := $(BUILD)/js/node_modules/.fencegate-installed
js-deps: $(JS_STAMP)
$(JS_STAMP): tests/js/package.json tests/js/package-lock.json
	mkdir -p $(BUILD)/js
	cp tests/js/package.json tests/js/package-lock.json $(BUILD)/js/
	cd $(BUILD)/js && npm ci --no-audit --no-fund --loglevel=error </dev/null
	touch $@

# The JS worker library (clients/js).  js-unit runs its unit tests in a copy
# under the build tree (dev packages pinned by its package-lock.json);
# js-client installs the package as users get it, from `npm pack`, into a
# scratch project for the integration tests (tests/integration/test_worker_js.py).
JSC_DIR   := $(BUILD)/jsclient
JSC_STAMP := $(JSC_DIR)/node_modules/.fencegate-installed
JSC_SRCS  := $(shell git ls-files clients/js 2>/dev/null)
JSU_DIR   := $(BUILD)/jsunit
js-client: $(JSC_STAMP)
$(JSC_STAMP): $(JSC_SRCS)
	rm -rf $(JSC_DIR) && mkdir -p $(JSC_DIR)
	cd clients/js && npm pack --pack-destination $(CURDIR)/$(JSC_DIR) --loglevel=error >/dev/null </dev/null
	cd $(JSC_DIR) && echo '{"name":"fencegate-worker-tests","private":true,"type":"module"}' > package.json && \
	  npm install --no-audit --no-fund --loglevel=error ./fencegate-*.tgz \
	    @aws-sdk/client-s3@3.967.0 @aws-sdk/lib-storage@3.967.0 </dev/null
	touch $@

js-unit: $(JSU_DIR)/node_modules/.fencegate-installed
	@rm -rf $(JSU_DIR)/src $(JSU_DIR)/test && cp -r clients/js/src clients/js/test $(JSU_DIR)/
	@cd $(JSU_DIR) && node --test test/ > test.log 2>&1; rc=$$?; \
	  grep '^not ok' -A20 test.log; \
	  ms=$$(sed -n 's/^# duration_ms //p' test.log | cut -d. -f1); \
	  echo "js unit: $$(sed -n 's/^# pass //p' test.log) passed, $$(sed -n 's/^# fail //p' test.log) failed ($$ms ms)"; \
	  exit $$rc
$(JSU_DIR)/node_modules/.fencegate-installed: clients/js/package.json clients/js/package-lock.json
	mkdir -p $(JSU_DIR)
	cp clients/js/package.json clients/js/package-lock.json $(JSU_DIR)/
	cd $(JSU_DIR) && npm ci --no-audit --no-fund --loglevel=error </dev/null
	touch $@

bench: $(BENCH_BINS) $(BIN)
	@for b in $(BENCH_BINS); do echo "== $$b"; $$b || exit 1; done

# Write windows: reads per lock per gateway, hand-over times (boots RGW; about 2 minutes).
bench-windows: $(BIN)
	FENCEGATE_BIN=$(CURDIR)/$(BIN) $(PYTHON) tests/bench/windows_bench.py

# Fleet sizes (issue 28): listings, restart, RSS and disk per lock, acquires, and refusals at
# 1/8/64 connections at 1k/10k/100k locks; a 5-minute audit flood (BENCH_FLOOD_S; BENCH_SMOKE=1
# for a short run).  BENCH_MKDIRS=1: lock directories as many as the locks, and the dir
# election's acquire rate beside the smallest and largest in alternating rounds (BENCH_ROUNDS,
# BENCH_ROUND_ACQUIRES; 100,000 mkdirs took 3 minutes on the dev VM).  Loopback, no RGW (about
# 9 min).
bench-scale: $(BIN) $(BUILD)/tests/helpers/store_seed
	FENCEGATE_BIN=$(CURDIR)/$(BIN) FENCEGATE_SEED=$(CURDIR)/$(BUILD)/tests/helpers/store_seed \
	  $(PYTHON) tests/bench/scale_bench.py

# Normal clients' latency alone and beside abuse (boots RGW; about 1 minute).
bench-stays-up: $(BIN)
	FENCEGATE_BIN=$(CURDIR)/$(BIN) $(PYTHON) tests/bench/stays_up_bench.py

# The gateway (without and with principals) against nginx, both in front of an
# nginx dav origin on tmpfs, pinned CPUs (about 7 minutes; BENCH_PERF=SECS adds a
# perf profile of the gateway under GET 1 KiB).
bench-proxy: $(BIN)
	FENCEGATE_BIN=$(CURDIR)/$(BIN) bash tests/bench/proxy_bench_dav.sh

# Instructions per small request (callgrind), the gateway without and with
# principals, in front of an nginx dav origin: a figure the machine's load
# cannot disturb.  BENCH_BASELINE=BIN adds another build side by side (about 3
# minutes, 6 with a baseline).
bench-request-cost: $(BIN)
	bash tests/bench/request_cost.sh $(BIN) $(BENCH_BASELINE)

# Worker loops against nginx worker processes: signed-payload PUT 1 MiB at each
# count in BENCH_CORES (tests/bench/cores_bench.sh; about 2 minutes for "1 2").
# BENCH_ORIGIN: sink (an origin that keeps no body, tests/bench/sink_origin.c) or dav.
BENCH_CORES ?= 1 2
bench-cores: $(BIN) $(BUILD)/tests/bench/sink_origin
	FENCEGATE_BIN=$(CURDIR)/$(BIN) BENCH_SINK=$(CURDIR)/$(BUILD)/tests/bench/sink_origin \
	  bash tests/bench/cores_bench.sh $(BENCH_CORES)

# $(BUILD)/cores-kit: the gateway, wrk, nginx and curl with their libraries and
# loader, to run bench-cores on a machine without Debian 12 (tests/bench/cores_kit.sh).
bench-cores-kit: $(BIN) $(BUILD)/tests/bench/sink_origin
	bash tests/bench/cores_kit.sh $(BUILD)/cores-kit $(BIN) $(BUILD)/tests/bench/sink_origin

# Side by side against nginx and direct RGW (boots RGW and nginx; about 2 minutes).
bench-proxy-rgw: $(BIN)
	FENCEGATE_BIN=$(CURDIR)/$(BIN) bash tests/bench/proxy_bench.sh

# Conditional writes' cost: fenced PUTs, off / on with the ETag cached / on with a HEAD
# (tests/bench/cond_bench.py; RGW_ENV names a running RGW's env file, tests/rgw/rgw.sh).
# bench-proxy-rgw runs the same on its own RGW, as its last table.
bench-cond: $(BIN)
	FENCEGATE_BIN=$(CURDIR)/$(BIN) $(PYTHON) tests/bench/cond_bench.py --rgw-env $(RGW_ENV)

# Fault injection, Jepsen style (tests/fault/jepsen.py: workers, nemesis, fault
# relays, checker on RGW's versions; boots its own RGW).  A bounded run is part
# of `make integration` (tests/integration/test_fault_windows.py).
FAULT_OUT  ?= $(BUILD)/fault
FAULT_ARGS ?=
fault-long: $(BIN)
	rm -rf $(FAULT_OUT)-long
	FENCEGATE_BIN=$(CURDIR)/$(BIN) $(PYTHON) tests/fault/jepsen.py --gateways 3 --workers 6 \
	  --locks 3 --duration 600 --progress 60 --out $(FAULT_OUT)-long $(FAULT_ARGS)

# The same workload around the fence (writes straight to RGW): must FAIL.
fault-bypass: $(BIN)
	rm -rf $(FAULT_OUT)-bypass
	FENCEGATE_BIN=$(CURDIR)/$(BIN) $(PYTHON) tests/fault/jepsen.py --mode bypass --gateways 1 \
	  --workers 6 --locks 3 --faults pause-worker --duration 30 --out $(FAULT_OUT)-bypass $(FAULT_ARGS); \
	  rc=$$?; test $$rc -eq 1 && echo "fault-bypass: the checker caught the unfenced writes, as it must"

# Writes held far past the commit margin (8 s against 1 s) at the relays, two
# gateways, every fault, conditional writes on: must pass; then the control,
# the same with them off: must FAIL (stale versions after newer ones).
FAULT_COND_ARGS := --gateways 2 --workers 6 --locks 3 --lease-ms 4500 --shared-window-ms 1200 \
                   --commit-margin-ms 1000 --long-hold-ms 8000 --p-long-hold 0.25
fault-cond: $(BIN)
	rm -rf $(FAULT_OUT)-cond $(FAULT_OUT)-cond-off
	FENCEGATE_BIN=$(CURDIR)/$(BIN) $(PYTHON) tests/fault/jepsen.py --mode cond $(FAULT_COND_ARGS) \
	  --duration 600 --progress 60 --out $(FAULT_OUT)-cond $(FAULT_ARGS)
	@# The control must fail.  Its hole needs a kill -9 at the right moment,
	@# so a control that finds nothing is run again on a new seed, 3 tries.
	@for try in 1 2 3; do \
	  rm -rf $(FAULT_OUT)-cond-off; \
	  FENCEGATE_BIN=$(CURDIR)/$(BIN) $(PYTHON) tests/fault/jepsen.py --mode cond-off $(FAULT_COND_ARGS) \
	    --duration 180 --progress 60 --out $(FAULT_OUT)-cond-off $(FAULT_ARGS); rc=$$?; \
	  if [ $$rc -eq 1 ]; then \
	    echo "fault-cond: with conditional writes off the checker caught stale versions (try $$try of 3), as it must"; \
	    exit 0; fi; \
	  [ $$rc -eq 0 ] || exit $$rc; \
	  echo "fault-cond: control try $$try found no stale version (the hole was not hit)"; \
	done; echo "fault-cond: the control found no stale version in 3 tries: the checker or the fault mix is blind"; exit 2

# ---- fuzzing (libFuzzer, Debian's clang) ----
FUZZ_CC    ?= clang
FUZZ_BUILD := build/fuzz
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
              $(BASEFLAGS) -MMD -MP
FUZZ_SRCS  := $(wildcard tests/fuzz/*_fuzz.c)
FUZZ_BINS  := $(FUZZ_SRCS:tests/fuzz/%.c=$(FUZZ_BUILD)/%)
FUZZ_OBJS  := $(LIB_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o) $(patsubst %,$(FUZZ_BUILD)/obj/llhttp/llhttp_%.o,api http llhttp)
FUZZ_RUNS  ?= 20000

$(FUZZ_BUILD)/obj/llhttp/llhttp_%.o: $(LLHTTP_SRC_DIR)/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -w -c -o $@ $<

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(WARN) -c -o $@ $<

$(FUZZ_BUILD)/libfuzz.a: $(FUZZ_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/%_fuzz: tests/fuzz/%_fuzz.c $(FUZZ_BUILD)/libfuzz.a
	$(FUZZ_CC) $(FUZZ_FLAGS) $(WARN) -Wno-missing-prototypes -fsanitize=fuzzer,address,undefined \
	  -o $@ $< $(FUZZ_BUILD)/libfuzz.a $(LDLIBS)

fuzz: $(FUZZ_BINS)

fuzz-smoke: $(FUZZ_BINS)
	@fails=0; for f in $(FUZZ_BINS); do n=$$(basename $$f); c=tests/fuzz/corpus/$${n%_fuzz}; \
	  mkdir -p $(FUZZ_BUILD)/work/$$n; \
	  if $$f -runs=$(FUZZ_RUNS) -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
	       -artifact_prefix=$(FUZZ_BUILD)/work/$$n/ $(FUZZ_BUILD)/work/$$n $$c \
	       > $(FUZZ_BUILD)/work/$$n.log 2>&1; then echo "fuzz $$n: ok"; \
	  else echo "fuzz $$n: FAILED"; tail -40 $(FUZZ_BUILD)/work/$$n.log; fails=$$((fails+1)); fi; done; \
	  echo "$$(( $(words $(FUZZ_BINS)) - fails )) passed, $$fails failed"; test $$fails -eq 0

# ---- lint ----
OUR_SRCS = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
lint: check-deps lint-refs check-circles
	clang-format --dry-run --Werror $(OUR_SRCS)
	@! grep -nE '\b(sprintf|strcpy|strcat|strncpy|strtok|atoi|atol|sscanf|gets)[[:space:]]*\(' $(OUR_SRCS) \
	  || { echo "banned function (STYLE R10)"; exit 1; }
	cppcheck --quiet --enable=warning,portability,performance --std=c11 --error-exitcode=1 \
	  --inline-suppr --suppress=missingIncludeSystem -I. \
	  --include=/usr/include/x86_64-linux-gnu/sys/queue.h $(MODULES)
	@# one clang-tidy per CPU, a few files each (it fails the step if any fails)
	printf '%s\n' $(LIB_SRCS) gateway/cli/main.c | xargs -P"$$(nproc)" -n 12 sh -c 'clang-tidy --quiet "$$@" -- $(BASEFLAGS)' clang-tidy
	@bad=$$(gofmt -l clients/go tests/go) && test -z "$$bad" || { echo "gofmt -l: $$bad"; exit 1; }

check-deps:
	@tests/check_deps.sh

# Circles of calls between the files of a room (nm on the objects).
check-circles: $(LIB_OBJS) $(BUILD)/obj/gateway/cli/main.o
	@$(PYTHON) tests/check_circles.py $(BUILD)/obj $(filter-out $(LLHTTP_OBJS),$(LIB_OBJS)) \
	  $(BUILD)/obj/gateway/cli/main.o

# Comments and docs that cite a DESIGN.md/README.md section that does not
# exist, or name a gw_/elect_/store_ identifier nothing defines.
lint-refs:
	@$(PYTHON) tests/lint_refs.py

format:
	clang-format -i $(OUR_SRCS)

deps:
	tests/deps.sh

run: $(BIN)
	tests/run-dev.sh

# make install [PREFIX=/usr/local] [DESTDIR=] : the binary, the systemd unit
# (naming the installed binary), the docs, and an example configuration, which
# becomes $(SYSCONFDIR)/fencegate/config.json only when there is none yet.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
UNITDIR    ?= $(PREFIX)/lib/systemd/system
DOCDIR     ?= $(PREFIX)/share/doc/fencegate
SYSCONFDIR ?= /etc
install: $(BIN) install-files
	@if [ ! -e "$(DESTDIR)$(SYSCONFDIR)/fencegate/config.json" ]; then \
	  install -d -m 0755 "$(DESTDIR)$(SYSCONFDIR)/fencegate"; \
	  install -m 0644 deploy/example.json "$(DESTDIR)$(SYSCONFDIR)/fencegate/config.json"; \
	  echo "install: $(DESTDIR)$(SYSCONFDIR)/fencegate/config.json (the example: edit it)"; \
	else echo "install: kept $(DESTDIR)$(SYSCONFDIR)/fencegate/config.json"; fi

install-files: $(BIN)
	install -d -m 0755 "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(UNITDIR)" "$(DESTDIR)$(DOCDIR)/examples"
	install -m 0755 $(BIN) "$(DESTDIR)$(BINDIR)/fencegate"
	sed -e 's|/usr/local/bin/fencegate|$(BINDIR)/fencegate|g' \
	    -e 's|/usr/local/share/doc/fencegate|$(DOCDIR)|g' \
	    -e 's|/etc/fencegate|$(SYSCONFDIR)/fencegate|g' deploy/fencegate.service \
	  > "$(DESTDIR)$(UNITDIR)/fencegate.service"
	chmod 0644 "$(DESTDIR)$(UNITDIR)/fencegate.service"
	install -m 0644 README.md docs/DESIGN.md "$(DESTDIR)$(DOCDIR)/"
	install -m 0644 deploy/README.md deploy/example.json deploy/dev.json "$(DESTDIR)$(DOCDIR)/examples/"

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/fencegate" "$(DESTDIR)$(UNITDIR)/fencegate.service"
	rm -rf "$(DESTDIR)$(DOCDIR)"

# make deb: build/deb/fencegate_VERSION_ARCH.deb (dpkg-deb; dependencies from dpkg-shlibdeps)
deb: $(BIN)
	deploy/debian/build-deb.sh $(CURDIR)/$(BIN) $(CURDIR)/$(BUILD)/deb

demo: $(BIN)
	tests/demo.sh

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
