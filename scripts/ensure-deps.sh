#!/usr/bin/env bash
# Install the Debian packages the test suite needs, if any are missing.
# clang + libclang-rt: libFuzzer and the sanitizer builds; tmux for TUI tests.
set -euo pipefail
need=()
command -v clang >/dev/null || need+=(clang)
[ -n "$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null)" ] || need+=(libclang-rt-14-dev)
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
# native symbols (docs/native.md): libdw through pkg-config; g++ builds the C++ test library
command -v pkg-config >/dev/null || need+=(pkg-config)
pkg-config --exists libdw 2>/dev/null || need+=(libdw-dev)
# zlib: the perfetto export's compressed packets (docs/exports.md)
pkg-config --exists zlib 2>/dev/null || need+=(zlib1g-dev)
# libdeflate: the same compression, about twice as fast (the build falls back to zlib)
pkg-config --exists libdeflate 2>/dev/null || need+=(libdeflate-dev)
# ISA-L: faster still at level 1 (the build falls back to libdeflate)
pkg-config --exists libisal 2>/dev/null || need+=(libisal-dev)
command -v g++ >/dev/null || need+=(g++)
# readers the export tests check against (docs/exports.md)
command -v callgrind_annotate >/dev/null || need+=(valgrind)
command -v babeltrace2 >/dev/null || need+=(babeltrace2)
command -v chromium >/dev/null || need+=(chromium)
# `ulma export --format otf2` builds against the OTF2 library; otf2-print reads its archives
pkg-config --exists otf2 2>/dev/null || need+=(libotf2-trace-dev)
command -v otf2-print >/dev/null || need+=(otf2-tools)
# MPI (docs/mpi.md): Open MPI's mpirun and mpicc, for libulma_mpi.so and the MPI tests
command -v mpirun >/dev/null || need+=(openmpi-bin)
command -v mpicc >/dev/null || need+=(libopenmpi-dev)
# two MPI "hosts" as network namespaces (tests/py/test_mpi_hosts.py)
command -v ip >/dev/null || need+=(iproute2)
command -v unshare >/dev/null || need+=(util-linux)
# the merge's peak memory (tests/py/test_mpi.py, bench/mpi.py)
[ -x /usr/bin/time ] || need+=(time)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
