import sys, collections, statistics
d = collections.defaultdict(lambda: collections.defaultdict(dict))
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) < 11 or p[0] != "round": continue
    r, f, cell, h, b, v = int(p[1]), p[2], p[4], int(p[6]), int(p[8]), float(p[10])
    d[(cell, h, b)][r][f] = v
print("| cell | h | batch | off (B transposed), trees/s per round | on (copy of Wᵀ) | on/off per round | median |")
print("| --- | ---: | ---: | --- | --- | --- | ---: |")
for k in sorted(d, key=lambda k: (-k[1], k[0], k[2])):
    rs = sorted(d[k])
    off = [d[k][r]["off"] for r in rs]; on = [d[k][r]["on"] for r in rs]
    ratios = [a / b for a, b in zip(on, off)]
    print(f"| {k[0]} | {k[1]} | {k[2]} | {', '.join(f'{x:.1f}' for x in off)} | {', '.join(f'{x:.1f}' for x in on)} | {', '.join(f'{x:.2f}' for x in ratios)} | {statistics.median(ratios):.2f}x |")
