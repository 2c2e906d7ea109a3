#!/usr/bin/env bash
# run.sh - run one fuzz target from its seed corpus.
#
# usage: run.sh FUZZER_BINARY SECONDS [SEED_DIR]
#
# Without SEED_DIR the seeds are valid traces, written by fuzz_make_seeds
# (built next to the fuzzer, see the ULMA_FUZZ block of CMakeLists.txt) into
# <fuzzer dir>/fuzz-run/seeds; with it (fuzz_rings: tests/fuzz/ring-seeds)
# they are that directory's files.  New inputs accumulate in
# <fuzzer dir>/fuzz-run/corpus-<fuzzer> across runs, and crash, leak,
# timeout and OOM reproducers land in <fuzzer dir>/fuzz-run/artifacts.
# Inputs are at most FUZZ_MAX_LEN bytes (default 8192).
# Exits non-zero if libFuzzer reports any failure.
set -euo pipefail

if [ $# -ne 2 ] && [ $# -ne 3 ]; then
	echo "usage: $0 FUZZER_BINARY SECONDS [SEED_DIR]" >&2
	exit 2
fi
fuzzer=$1
seconds=$2
seed_dir=${3:-}
if [ ! -x "$fuzzer" ]; then
	echo "run.sh: $fuzzer is not an executable (build the fuzz_trace_reader target)" >&2
	exit 2
fi
bindir=$(cd "$(dirname "$fuzzer")" && pwd)
seeder=$bindir/fuzz_make_seeds
if [ ! -x "$seeder" ]; then
	echo "run.sh: seed writer $seeder is missing" >&2
	exit 2
fi

work=$bindir/fuzz-run
seeds=$work/seeds
corpus=$work/corpus-$(basename "$fuzzer")
artifacts=$work/artifacts
rm -rf "$seeds" "$artifacts"
mkdir -p "$seeds" "$corpus" "$artifacts"
if [ -n "$seed_dir" ]; then
	if [ -z "$(ls -A "$seed_dir" 2>/dev/null)" ]; then
		echo "run.sh: no seeds in $seed_dir" >&2
		exit 2
	fi
	cp "$seed_dir"/* "$seeds"/
else
	"$seeder" "$seeds"
fi

status=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="${FUZZ_MAX_LEN:-8192}" \
	-print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$seeds" || status=$?

found=$(find "$artifacts" -type f | wc -l)
if [ "$status" -ne 0 ] || [ "$found" -ne 0 ]; then
	echo "run.sh: fuzzer failed (exit status $status, $found artifact(s) in $artifacts)" >&2
	find "$artifacts" -type f >&2
	exit 1
fi
echo "run.sh: no failure in ${seconds}s of fuzzing ($(find "$corpus" -type f | wc -l) inputs in the corpus)"
