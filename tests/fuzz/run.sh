#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in build-fuzz and runs each one
# bounded (fuzz_lpm_image from a seed corpus of valid images,
# fuzz_switch_frame from one of valid frames, fuzz_remote_node from built
# trees and real walks' READ answers, fuzz_mem_request from a walk's READ
# requests, malformed READs and PUTs). For CI:
#   tests/fuzz/run.sh [seconds per target (30)] [extra libFuzzer flags...]
# Needs clang++ with libFuzzer (Debian: clang-14 and libclang-rt-14-dev).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FOREIN_FUZZ_BUILD:-$root/build-fuzz}
seconds=${1:-30}
shift || true
cxx=${CXX_FUZZ:-$(command -v clang++ || command -v clang++-14 || true)}
cc=${CC_FUZZ:-$(command -v clang || command -v clang-14 || true)}
if [[ -z "$cxx" || -z "$cc" ]]; then
  echo "run.sh: clang++ not found (Debian: apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 1
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFOREIN_FUZZ=ON \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
targets=(fuzz_backend_image fuzz_backend_batch fuzz_packet fuzz_kv_memif_frame fuzz_data_node fuzz_honeycomb_node
  fuzz_remote_node fuzz_mem_request fuzz_history_line)
# forein-switch's frame handling, when DPDK is there (as for the switch).
seed_targets=(fuzz_lpm_image_seeds fuzz_remote_node_seeds fuzz_mem_request_seeds)
if pkg-config --exists libdpdk 2>/dev/null; then
  targets+=(fuzz_switch_frame)
  seed_targets+=(fuzz_switch_frame_seeds)
fi
cmake --build "$build" -j "${JOBS:-2}" --target fuzz_lpm_image "${seed_targets[@]}" "${targets[@]}"
corpus=$build/fuzz-corpus/lpm_image
mkdir -p "$corpus"
"$build/tests/fuzz/fuzz_lpm_image_seeds" "$corpus"
# A fresh work corpus each run keeps CI bounded; the seeds come first.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/tests/fuzz/fuzz_lpm_image" -max_total_time="$seconds" -max_len=8192 -timeout=10 \
  -print_final_stats=1 "$@" "$work" "$corpus"
for target in "${targets[@]}"; do
  rm -rf "$work"/*
  seeds=()
  if [[ -x "$build/tests/fuzz/${target}_seeds" && $target != fuzz_lpm_image ]]; then
    seeds=("$build/fuzz-corpus/${target#fuzz_}")
    mkdir -p "${seeds[0]}"
    "$build/tests/fuzz/${target}_seeds" "${seeds[0]}"
  fi
  "$build/tests/fuzz/$target" -max_total_time="$seconds" -max_len=8192 -timeout=10 \
    -print_final_stats=1 "$@" "$work" "${seeds[@]}"
done
