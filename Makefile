# ulma - build, demo and test entry points.  `make demo` and `make test` are
# the two commands the README opens with; both work on a fresh machine.

PYTHON   ?= python3
# every CPython 3.9-3.13 the machine has (pyenv layout), else $(PYTHON)
PYTHONS  ?= $(or $(sort $(wildcard /root/.pyenv/versions/3.9*/bin/python3 /root/.pyenv/versions/3.1[0-3]*/bin/python3)),$(shell command -v $(PYTHON)))
JOBS     ?= 2
# seconds per fuzz target (five): the whole of `make test` stays near 40 min on the 2-core CI machine
FUZZ_SECONDS ?= 40
BUILD    := build

.PHONY: demo install deps test unit asan tsan fuzz pytest bench bench-peers clean

demo: install
	$(PYTHON) -m ulma run examples/fib.py

install:
	$(PYTHON) -m pip install --quiet .

# Debian packages the tests need (clang for libFuzzer); installs only what is missing.
deps:
	@bash scripts/ensure-deps.sh

test: deps unit asan tsan fuzz pytest
	@echo "all test suites passed"

# configure every time: cheap, and it picks up new tests/unit/test_*.c files
unit:
	cmake -S . -B $(BUILD)/c -G Ninja -DULMA_BUILD_TESTS=ON -DULMA_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD)/c -j $(JOBS)
	ctest --test-dir $(BUILD)/c --output-on-failure

asan:
	CC=clang cmake -S . -B $(BUILD)/asan -G Ninja -DULMA_BUILD_TESTS=ON -DULMA_WERROR=ON \
	  -DULMA_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug
	cmake --build $(BUILD)/asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(BUILD)/asan --output-on-failure

tsan:
	CC=clang cmake -S . -B $(BUILD)/tsan -G Ninja -DULMA_BUILD_TESTS=ON -DULMA_WERROR=ON \
	  -DULMA_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug
	cmake --build $(BUILD)/tsan -j $(JOBS)
	ctest --test-dir $(BUILD)/tsan --output-on-failure -R ring

fuzz:
	CC=clang cmake -S . -B $(BUILD)/fuzz -G Ninja -DULMA_FUZZ=ON -DULMA_SANITIZE=address,undefined \
	  -DCMAKE_BUILD_TYPE=Debug
	cmake --build $(BUILD)/fuzz -j $(JOBS) --target fuzz_trace_reader fuzz_export fuzz_report fuzz_merge fuzz_rings
	bash tests/fuzz/run.sh $(BUILD)/fuzz/fuzz_trace_reader $(FUZZ_SECONDS)
	bash tests/fuzz/run.sh $(BUILD)/fuzz/fuzz_export $(FUZZ_SECONDS)
	bash tests/fuzz/run.sh $(BUILD)/fuzz/fuzz_report $(FUZZ_SECONDS)
	bash tests/fuzz/run.sh $(BUILD)/fuzz/fuzz_merge $(FUZZ_SECONDS)
	FUZZ_MAX_LEN=16384 bash tests/fuzz/run.sh $(BUILD)/fuzz/fuzz_rings $(FUZZ_SECONDS) tests/fuzz/ring-seeds

# tests marked `once` (nothing in them depends on the interpreter; see
# tests/py/conftest.py) run on this Python version only: the newest present
ONCE_ON ?= $(shell for py in $(PYTHONS); do $$py -c 'import sys; print("%d.%d" % sys.version_info[:2])'; \
             done | sort -V | tail -n 1)

# one virtual environment per Python version, each with ulma installed from this tree
pytest:
	@set -e; for py in $(PYTHONS); do \
	  v=$$($$py -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
	  env=$(BUILD)/venv-$$v; \
	  echo "=== pytest on Python $$v ($$py)"; \
	  [ -x $$env/bin/python ] || $$py -m venv $$env; \
	  $$env/bin/python -m pip install --quiet --upgrade pip >/dev/null; \
	  $$env/bin/python -m pip install --quiet pytest cython setuptools line_profiler gprof2dot mpi4py viztracer numpy . ; \
	  ULMA_TEST_ONCE_ON=$(ONCE_ON) $$env/bin/python -m pytest -q tests/py; \
	done

bench: install
	$(PYTHON) bench/overhead.py

# ulma against VizTracer, yappi, pyinstrument, py-spy, Scalene, memray and cProfile
# (installs them into build/bench-peers-X.Y); regenerates docs/benchmarks.md
BENCH_PYTHONS ?= $(or $(wildcard /root/.pyenv/versions/3.12*/bin/python3 /root/.pyenv/versions/3.11*/bin/python3),$(shell command -v $(PYTHON)))
bench-peers:
	for py in $(BENCH_PYTHONS); do $$py bench/peers.py --write-doc docs/benchmarks.md || exit 1; done

clean:
	rm -rf $(BUILD) *.trace
