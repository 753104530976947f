#!/usr/bin/env bash
# Installs what habitat needs on Debian 12 (run as root). Idempotent. clang and its sanitizer and libFuzzer
# runtimes (libclang-rt, only a Recommends of clang) serve scripts/sanitize.sh and tests/fuzz. protobuf (library and
# protoc) builds `habitat export-et`, the Chakra execution traces for ASTRA-sim.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends cmake g++ make libboost-json1.81-dev zlib1g-dev catch2 libcli11-dev \
  libbenchmark-dev libeigen3-dev libtorch-dev chromium clang libclang-rt-14-dev \
  pybind11-dev python3-dev python3-pytest python3-pandas python3-torch libprotobuf-dev protobuf-compiler >/dev/null
# cuda_occupancy.h (plain host C++) comes from the CUDA toolkit. Use /usr/local/cuda where it exists,
# else Debian's non-free CUDA headers.
if [ ! -f /usr/local/cuda/include/cuda_occupancy.h ] && [ ! -f /usr/include/cuda_occupancy.h ]; then
  echo "install-deps: no CUDA toolkit found; installing Debian's nvidia-cuda-dev (non-free) for cuda_occupancy.h"
  for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    [ -f "$f" ] && sed -i -E '/^Components:/ s/$/ contrib non-free/; /^deb .*debian/ s/ main$/ main contrib non-free/' "$f"
  done
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nvidia-cuda-dev >/dev/null
fi
echo "install-deps: done"
