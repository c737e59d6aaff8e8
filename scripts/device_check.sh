#!/usr/bin/env bash
# The GPU check on a machine that can both build and run it (a GPU and
# Debian's -dev packages): builds the bundle (scripts/device_bundle.sh) and
# runs its check.sh (scripts/device_check_bundle.sh: the GPU tests, then
# the benchmarks and a summary). On the lent device, which cannot build,
# build the bundle here and run `bash device-bundle/check.sh` there (the
# run tool's carry: device-bundle). Env: BUILD, DEST (the bundle's), OUT,
# DEADLINE, SYLVA_DATA (check.sh's and device_bundle.sh's).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/device_bundle.sh
exec bash "${DEST:-device-bundle}/check.sh"
