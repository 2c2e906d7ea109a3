#!/usr/bin/env bash
# run.sh - fuzz the trace reader from a seed corpus of valid traces.
#
# usage: run.sh FUZZER_BINARY SECONDS
#
# The seeds are written by fuzz_make_seeds (built next to the fuzzer, see the
# ULMA_FUZZ block of CMakeLists.txt) into <fuzzer dir>/fuzz-run/seeds; new
# inputs accumulate in <fuzzer dir>/fuzz-run/corpus across runs, and crash,
# leak, timeout and OOM reproducers land in <fuzzer dir>/fuzz-run/artifacts.
# Exits non-zero if libFuzzer reports any failure.
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 FUZZER_BINARY SECONDS" >&2
	exit 2
fi
fuzzer=$1
seconds=$2
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
corpus=$work/corpus
artifacts=$work/artifacts
rm -rf "$seeds" "$artifacts"
mkdir -p "$seeds" "$corpus" "$artifacts"
"$seeder" "$seeds"

status=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
	-print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$seeds" || status=$?

found=$(find "$artifacts" -type f | wc -l)
if [ "$status" -ne 0 ] || [ "$found" -ne 0 ]; then
	echo "run.sh: fuzzer failed (exit status $status, $found artifact(s) in $artifacts)" >&2
	find "$artifacts" -type f >&2
	exit 1
fi
echo "run.sh: no failure in ${seconds}s of fuzzing ($(find "$corpus" -type f | wc -l) inputs in the corpus)"
