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
# --python: also Python's headers and venv, and a virtual environment
# build/pyvenv with nanobind, scikit-build-core, numpy and pytest from PyPI
# (SYLVA_BUILD_PYTHON=ON; docs/python.md).
python=0
for arg in "$@"; do
  case $arg in
    --fuzz) packages+=(clang libclang-rt-14-dev) ;;
    --python) python=1; packages+=(python3 python3-dev python3-venv) ;;
    *) echo "install_deps: unknown option $arg (--fuzz, --python)" >&2; exit 2 ;;
  esac
done

# The virtual environment of --python, made or completed (idempotently: it
# does nothing when every module imports).
python_env() {
  local venv=build/pyvenv modules="nanobind scikit_build_core numpy pytest"
  cd "$(dirname "$0")/.."
  if [[ -x $venv/bin/python ]] && $venv/bin/python -c "import ${modules// /, }" 2>/dev/null; then
    echo "install_deps: $venv has ${modules// /, }"
    return 0
  fi
  echo "install_deps: making $venv (pip install nanobind scikit-build-core numpy pytest)"
  python3 -m venv "$venv" && "$venv/bin/python" -m pip install -q --upgrade pip &&
    "$venv/bin/python" -m pip install -q nanobind scikit-build-core numpy pytest
}

missing=()
for p in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install_deps: all ${#packages[@]} packages already installed"
  if [[ $python -eq 1 ]]; then python_env; fi
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
if [[ $python -eq 1 ]]; then python_env; fi
echo "install_deps: done"
