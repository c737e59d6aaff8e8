import sys, collections, statistics
d = collections.defaultdict(lambda: collections.defaultdict(dict))
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) < 14 or p[0] != "round": continue
    r, f, w, h, b = int(p[1]), p[2], p[3], int(p[5]), int(p[7])
    d[(w, h, b)][r][f] = (float(p[9]), float(p[11]), float(p[13]))
print("| workload | h | batch | units/s off, per round | on | on/off per round | median | values MB off → on | peak RSS MB off → on (median) |")
print("| --- | ---: | ---: | --- | --- | --- | ---: | --- | --- |")
for k in d:
    rs = sorted(d[k])
    off = [d[k][r]["off"] for r in rs]; on = [d[k][r]["on"] for r in rs]
    ratios = [a[0] / b[0] for a, b in zip(on, off)]
    med = lambda xs: statistics.median(xs)
    print(f"| {k[0]} | {k[1]} | {k[2]} | {', '.join(f'{x[0]:.0f}' for x in off)} | {', '.join(f'{x[0]:.0f}' for x in on)} | "
          f"{', '.join(f'{x:.2f}' for x in ratios)} | {med(ratios):.2f}x | {med([x[1] for x in off]):.0f} → {med([x[1] for x in on]):.0f} | "
          f"{med([x[2] for x in off]):.0f} → {med([x[2] for x in on]):.0f} |")
