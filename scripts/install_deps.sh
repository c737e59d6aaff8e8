#!/usr/bin/env bash
# Installs Sylva's build and test dependencies on Debian 12 (bookworm).
# Idempotent: when every package is already installed it does nothing (no
# apt-get, no network), so scripts/run_tests.sh can call it on every run.
#
# OpenMP: g++ brings libgomp (g++-12 -> gcc-12 -> libgcc-12-dev ships
# libgomp.so), which is all find_package(OpenMP) needs; libomp-dev would
# only matter for clang++. The ASan/UBSan runtimes come with gcc-12 too.
# Open MPI (libopenmpi-dev, openmpi-bin): data-parallel training over
# processes and its mpirun tests (docs/distributed.md).
set -euo pipefail

packages=(
  g++ cmake ninja-build
  libeigen3-dev nlohmann-json3-dev libdnnl-dev ocl-icd-opencl-dev libyaml-cpp-dev
  coinor-libcbc-dev pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  libopenmpi-dev openmpi-bin
  git ca-certificates
)
# --fuzz: also clang and its libFuzzer runtime (SYLVA_BUILD_FUZZERS=ON; docs/reliability.md).
if [[ ${1:-} == --fuzz ]]; then
  packages+=(clang libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install_deps: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "install_deps: installing ${missing[*]}"
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "install_deps: missing packages (${missing[*]}) and not root; run as root or install them" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${packages[@]}"
echo "install_deps: done"
