# forein build entry point. CMake does the C++ work; this file gives the
# commands people type. `make` builds, `make check` runs every test suite,
# `make demo` runs the main job (building only what it needs), and leaves
# its PostgreSQL running until `make demo-stop`.

BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_TYPE ?= RelWithDebInfo
PREFIX     ?= /usr/local

.PHONY: all deps configure check demo demo-stop bench bench-all testbed check-asan check-tsan clean install install-sqlite install-pg pg-bench

all: configure
	cmake --build $(BUILD) -j $(JOBS)

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_TYPE) >/dev/null

check: all install-pg
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

install: install-sqlite install-pg

# The SQLite variant under PREFIX: include/forein/sqlite.h,
# lib/libforein_sqlite.a, lib/forein/forein.so, lib/pkgconfig/forein-sqlite.pc
# (docs/sqlite.md). Builds only those two targets.
install-sqlite: configure
	cmake --build $(BUILD) -j $(JOBS) --target forein_sqlite forein_sqlite_ext
	cmake --install $(BUILD) --component sqlite --prefix $(PREFIX)

# The PostgreSQL extension, built with PGXS against the PostgreSQL that
# pg_config names (no JIT bitcode: clang is not a dependency); PREFIX does
# not apply.
install-pg: deps
	$(MAKE) -C pg_extension with_llvm=no
	$(MAKE) -C pg_extension with_llvm=no install

# Builds forein_demo and the extension only (no tests, no benchmarks), with
# one line per step (compiler output: $(BUILD)/demo-build.log), installs the
# extension, runs the demo and leaves its cluster running.
demo: deps
	@BUILD=$(abspath $(BUILD)) JOBS=$(JOBS) CMAKE_TYPE=$(CMAKE_TYPE) bash scripts/demo.sh

# Stops the demo's PostgreSQL and removes its data (scratch directory).
demo-stop:
	@if [ -f $(BUILD)/demo-pg/scratch ]; then \
		bash scripts/pg-cluster.sh stop $(abspath $(BUILD))/demo-pg && \
		echo "[demo] stopped the demo's PostgreSQL and removed its data (server log kept: $(BUILD)/demo-pg/log)"; \
	else echo "[demo] no demo PostgreSQL to stop (make demo starts one)"; fi

# The end-to-end speedup of switch hints through forein-switch (root: TAP
# devices); flags through TESTBED_FLAGS, e.g. TESTBED_FLAGS="--seconds 5".
testbed: all
	bash scripts/testbed.sh --build $(abspath $(BUILD)) $(TESTBED_FLAGS)

pg-bench: install-pg
	bash tests/bench/run_pg_bench.sh $(BUILD)/pg-bench

bench: all
	bash tests/bench/run_engine_bench.sh $(BUILD)

# Every benchmark of docs/BENCHMARKS.md in one run (80 minutes on 2
# cores; root for the testbed): the engine per backend, PostgreSQL per
# backend, the testbed per backend, sysbench and pgbench against btree,
# then the report (docs/BENCHMARKS.md's tables, docs/bench/all/ plots and
# CSVs). Flags through BENCH_FLAGS, e.g. BENCH_FLAGS="--stages engine,report".
bench-all: all install-pg
	bash scripts/bench-all.sh --build $(abspath $(BUILD)) $(BENCH_FLAGS)

# Sanitizer builds live in their own trees so they never mix objects.
check-asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DFOREIN_SANITIZE=address >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS) -LE bench

check-tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFOREIN_SANITIZE=thread >/dev/null
	# Only what the concurrent tests run: each is the executable of its name
	# (tests/CMakeLists.txt), with the programs it starts as dependencies.
	cmake --build build-tsan -j $(JOBS) --target \
	  $$(cd build-tsan && ctest -N -L concurrent | sed -n 's/^ *Test *#[0-9]*: //p')
	cd build-tsan && ctest --output-on-failure -j $(JOBS) -L concurrent

clean:
	-@[ ! -f $(BUILD)/demo-pg/scratch ] || bash scripts/pg-cluster.sh stop $(abspath $(BUILD))/demo-pg
	rm -rf $(BUILD) build-asan build-tsan
	$(MAKE) -C pg_extension with_llvm=no clean
