# Table of ab.sh's output: per configuration, units/s of each binary per
# round, new/old and new/new-no-direct per round with their medians, and
# the medians of values held and peak RSS.
import sys, collections, statistics
d = collections.defaultdict(lambda: collections.defaultdict(dict))
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) < 14 or p[0] != "round": continue
    r, v, w, h, b = int(p[1]), p[2], p[3], int(p[5]), int(p[7])
    d[(w, h, b)][r][v] = (float(p[9]), float(p[11]), float(p[13]))
med = statistics.median
print("| workload | h | batch | old, per round | new | new, --no-direct-selection | new/old per round | median | new/no-direct median | values MB old → new | peak RSS MB old → new |")
print("| --- | ---: | ---: | --- | --- | --- | --- | ---: | ---: | --- | --- |")
for k in d:
    rs = sorted(d[k])
    col = {v: [d[k][r][v] for r in rs] for v in ("old", "new", "new-no-direct")}
    ratio = [a[0] / b[0] for a, b in zip(col["new"], col["old"])]
    direct = [a[0] / b[0] for a, b in zip(col["new"], col["new-no-direct"])]
    fmt = lambda xs: ", ".join(f"{x[0]:.0f}" for x in xs)
    print(f"| {k[0]} | {k[1]} | {k[2]} | {fmt(col['old'])} | {fmt(col['new'])} | {fmt(col['new-no-direct'])} | "
          f"{', '.join(f'{x:.2f}' for x in ratio)} | {med(ratio):.2f}x | {med(direct):.2f}x | "
          f"{med([x[1] for x in col['old']]):.0f} → {med([x[1] for x in col['new']]):.0f} | "
          f"{med([x[2] for x in col['old']]):.0f} → {med([x[2] for x in col['new']]):.0f} |")
