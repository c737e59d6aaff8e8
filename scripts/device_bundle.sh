#!/usr/bin/env bash
# Builds, on this CPU machine, the self-contained GPU check that runs on the
# bare lent device (no -dev packages, no network, only the checkout
# travels): the CUDA configuration's test and benchmark binaries (stripped),
# every shared library they load that is neither glibc, libstdc++, libgcc
# nor a CUDA library (oneDNN, COIN-OR, yaml-cpp, gomp, Open MPI, ...), the
# data the check reads (SST, PTB, the IOS graphs and CoSA's ResNet-50
# layers, copied from ../shared/data: never committed), packed into
# device-bundle/payload.tar.xz beside device-bundle/check.sh
# (scripts/device_check_bundle.sh) and a MANIFEST. device-bundle/ is
# git-ignored; the device gets it with the run tool's carry.
#
#   bash scripts/device_bundle.sh            # then, on the device: bash device-bundle/check.sh
#
# Env: BUILD (default build/bundle; an existing -DSYLVA_BUILD_CUDA=ON
# Release build may be reused), DEST (default device-bundle), SYLVA_DATA
# (default ../shared/data). Fails if the bundle is over 60 MiB or if any
# binary resolves a library outside the bundle other than glibc,
# libstdc++, libgcc and CUDA's (ldd with the bundle's library path: the
# proof, printed and kept in the MANIFEST).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/bundle}
DEST=${DEST:-device-bundle}
data=${SYLVA_DATA:-../shared/data}
[[ -d $data/sst && -d $data/ptb && -d $data/ios/graphs && -d $data/cosa/workloads/resnet50 ]] ||
  { echo "device_bundle: $data lacks sst/, ptb/, ios/graphs/ or cosa/workloads/resnet50/ (set SYLVA_DATA)" >&2; exit 1; }

tests=(test_ir_op_harness_test test_runtime_invariance_test test_train_device_parallel_test)
for t in tests/cuda/*_test.cc; do tests+=("test_cuda_$(basename "$t" .cc)"); done
benches=(bench_cuda bench_cudnn_lstm bench_suite bench_ios bench_cosa_gpu)
if [[ ! -f $BUILD/build.ninja ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYLVA_BUILD_CUDA=ON -DSYLVA_BUILD_EXAMPLES=ON \
    -DSYLVA_BUILD_BENCHMARKS=ON -DSYLVA_BUILD_TESTS=ON -DSYLVA_WITH_MPI=OFF > /dev/null
fi
# Open MPI's libevent needs glibc 2.36 (Debian 12's), which the device may not have: the bundle's own build leaves MPI out.
grep -q "^SYLVA_WITH_MPI:STRING=OFF" "$BUILD/CMakeCache.txt" ||
  echo "device_bundle: note: $BUILD is built with MPI; its libraries travel too and need the device's glibc >= 2.36"
grep -q "SYLVA_BUILD_CUDA:BOOL=ON" "$BUILD/CMakeCache.txt" ||
  { echo "device_bundle: $BUILD is not a -DSYLVA_BUILD_CUDA=ON build" >&2; exit 1; }
echo "device_bundle: building ${#tests[@]} tests and ${#benches[@]} benchmarks in $BUILD"
cmake --build "$BUILD" --target "${tests[@]}" "${benches[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/data"
for t in "${tests[@]}"; do cp "$BUILD/tests/$t" "$stage/bin/"; done
for b in "${benches[@]}"; do cp "$BUILD/benchmarks/$b" "$stage/bin/"; done
strip --strip-unneeded "$stage"/bin/*

# What the device provides itself: glibc, the GCC runtime, and CUDA's
# libraries (the toolkit's or the nvidia-* wheels'; check.sh says which).
system='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libutil|libresolv|libstdc\+\+|libgcc_s)\.'
cuda='^(libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnvrtc[a-z-]*|libnccl|libnvJitLink|libcufft|libcurand)\.'
for bin in "$stage"/bin/*; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
  [[ $name =~ $system || $name =~ $cuda ]] && continue
  cp -L "$path" "$stage/lib/$name"
done

for d in sst ptb; do mkdir -p "$stage/data/$d" && cp "$data/$d"/*.txt "$stage/data/$d/"; done
mkdir -p "$stage/data/ios" "$stage/data/cosa/workloads"
cp -r "$data/ios/graphs" "$stage/data/ios/"
cp -r "$data/cosa/workloads/resnet50" "$stage/data/cosa/workloads/"

# The proof: with only the bundle's libraries on the path, nothing else outside glibc/GCC/CUDA.
proof=$(for bin in "$stage"/bin/*; do
  LD_LIBRARY_PATH=$stage/lib ldd "$bin" | awk -v b="$(basename "$bin")" '$2 == "=>" { print b, $1, $3 }'
done)
outside=$(awk -v s="$stage/lib/" -v sys="$system" -v cu="$cuda" \
  'index($3, s) != 1 && $2 !~ sys && $2 !~ cu { print }' <<< "$proof")
if [[ -n $outside ]]; then
  echo "device_bundle: libraries resolved outside the bundle (add them or allow them):" >&2
  echo "$outside" >&2
  exit 1
fi

rm -rf "$DEST"
mkdir -p "$DEST"
tar -cJf "$DEST/payload.tar.xz" -C "$stage" .
cp scripts/device_check_bundle.sh "$DEST/check.sh"
chmod +x "$DEST/check.sh"
{
  echo "Sylva GPU check bundle, $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo '+changes'), built $(date -u +%FT%TZ) on $(uname -n)"
  echo "payload: $(du -k "$DEST/payload.tar.xz" | cut -f1) KiB packed, $(du -sk "$stage" | cut -f1) KiB unpacked"
  echo "binaries: $(cd "$stage/bin" && echo *)"
  echo "bundled libraries: $(cd "$stage/lib" && echo *)"
  echo "needs glibc >= $(for f in "$stage"/bin/* "$stage"/lib/*; do objdump -T "$f" 2> /dev/null; done |
    grep -oE "GLIBC_2\.[0-9]+" | sort -t. -k2 -n -u | tail -1 | cut -d_ -f2)"
  echo "ldd with LD_LIBRARY_PATH=<bundle>/lib: every library outside the bundle is glibc, libstdc++, libgcc or CUDA's:"
  awk -v s="$stage/lib/" 'index($3, s) != 1 { print $2 " => " $3 }' <<< "$proof" | sort | uniq -c |
    awk '{ printf "  %s %s %s (%d of the binaries)\n", $2, $3, $4, $1 }'
} > "$DEST/MANIFEST"
size=$(du -sk "$DEST" | cut -f1)
cat "$DEST/MANIFEST"
echo "device_bundle: $DEST is $((size / 1024)) MiB"
((size <= 60 * 1024)) || { echo "device_bundle: over 60 MiB" >&2; exit 1; }
