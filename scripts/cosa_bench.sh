#!/usr/bin/env bash
# CoSA measurements for docs/benchmarks.md: `sylva-cosa batch` (CoSA vs
# random-5, best of 1000 valid random mappings and the hybrid mapper at a
# time budget, all on the analytical model) over ResNet-50 (distinct
# layers), AlexNet and VGG16 on the Simba arch and simba_large, then CoSA
# against the mappings real Timeloop's mapper found in 60 s for the golden
# layers. Needs the data (SYLVA_DATA, default shared/data beside the repo).
# Env: BUILD (default build), OUT (default build/cosa_bench), HYBRID_SECONDS
# (default 2), THREADS (default 2), BEST_OF (default 1000), NETS (default
# "resnet50 alexnet vgg16"), ARCHS (default "simba simba_large").
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=${OUT:-build/cosa_bench}
DATA=${SYLVA_DATA:-$(cd .. && pwd)/shared/data}
COSA=$DATA/cosa
[ -d "$COSA" ] || { echo "cosa_bench: no CoSA data at $COSA (set SYLVA_DATA)"; exit 1; }
mkdir -p "$OUT"
cmake --build "$BUILD" --target sylva-cosa
for arch in ${ARCHS-simba simba_large}; do
  for net in ${NETS:-resnet50 alexnet vgg16}; do
    layers=$COSA/workloads/$net/layers.yaml
    [ -f "$COSA/workloads/$net/unique_layers.yaml" ] && layers=$COSA/workloads/$net/unique_layers.yaml
    echo "== $net on $arch ($(basename "$layers"))"
    "$BUILD"/tools/sylva-cosa batch --arch "$COSA/arch/$arch.yaml" --mapspace "$COSA/mapspace/mapspace.yaml" \
      --layers "$layers" --best-of "${BEST_OF:-1000}" --hybrid-seconds "${HYBRID_SECONDS:-2}" \
      --threads "${THREADS:-2}" --csv "$OUT/${net}_${arch}.csv" | tee "$OUT/${net}_${arch}.txt"
  done
done
echo "== CoSA vs timeloop-mapper (60 s, 2 threads, random-pruned) on the golden layers, arch simba_bw20"
printf '%-22s %12s %12s %10s %10s\n' layer "CoSA cycles" "mapper" "CoSA uJ" "mapper uJ"
for json in "$COSA"/timeloop_golden/*.json; do
  layer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layer"])' "$json")
  line=$("$BUILD"/tools/sylva-cosa schedule --arch "$COSA/examples/simba_bw20.yaml" \
    --mapspace "$COSA/mapspace/mapspace.yaml" --problem "$COSA/workloads/resnet50/$layer" -o "$OUT/$layer.map.yaml" |
    grep -E '^[^ ]+: valid')
  python3 - "$json" "$line" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
mapper = [m for m in d["mappings"] if m["source"] == "timeloop-mapper"][0]
cyc = int(re.search(r"(\d+) cycles", sys.argv[2]).group(1))
uj = float(re.search(r"energy ([0-9.e+]+) uJ", sys.argv[2]).group(1))
print("%-22s %12d %12d %10.2f %10.2f" % (d["layer"][:-5], cyc, mapper["cycles"], uj, mapper["energy_pj"] * 1e-6))
PY
done | tee "$OUT/golden.txt"
echo "== summary: geomean of baseline / CoSA (> 1: CoSA better), from $OUT/*.csv"
python3 scripts/bench_report.py --cosa-summary "$OUT"
