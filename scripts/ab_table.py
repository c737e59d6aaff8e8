"""Table of scripts/ab_bench.sh's output: per configuration, units/s of A
and B per round, A/B per round and its median, and the medians of values
held and peak RSS.  Usage: python3 scripts/ab_table.py [--summary] OUT...
[NAME_A NAME_B]. Several OUT files are pooled (their rounds kept apart);
--summary prints per configuration the rounds, the median A/B with its
quartiles, and the median peak RSS of each side and of A - B per round."""
import collections
import statistics
import sys

args = sys.argv[1:]
summary = "--summary" in args
args = [a for a in args if a != "--summary"]
paths = [a for a in args if "/" in a or a.endswith(".txt")]
names = [a for a in args if a not in paths]
a_name, b_name = (names[0], names[1]) if len(names) > 1 else ("a", "b")
d = collections.defaultdict(lambda: collections.defaultdict(dict))
for f, path in enumerate(paths):
    for line in open(path):
        p = line.split()
        if len(p) < 14 or p[0] != "round":
            continue
        d[(p[3], int(p[5]), int(p[7]))][(f, int(p[1]))][p[2]] = (float(p[9]), float(p[11]), float(p[13]))
med = statistics.median
if summary:
    print(f"| workload | h | batch | rounds | {a_name}/{b_name} median (quartiles) | peak RSS MB {b_name} → {a_name} "
          f"| {a_name} − {b_name} per round, median (range) |")
    print("| --- | ---: | ---: | ---: | --- | --- | --- |")
for k in d:
    rs = [r for r in sorted(d[k]) if a_name in d[k][r] and b_name in d[k][r]]
    a, b = [d[k][r][a_name] for r in rs], [d[k][r][b_name] for r in rs]
    ratio = [x[0] / y[0] for x, y in zip(a, b)]
    if summary:
        q = statistics.quantiles(ratio, n=4) if len(ratio) > 1 else [ratio[0], ratio[0], ratio[0]]
        rss = [x[2] - y[2] for x, y in zip(a, b)]
        print(f"| {k[0]} | {k[1]} | {k[2]} | {len(rs)} | {med(ratio):.3f}x ({q[0]:.2f}–{q[2]:.2f}) | "
              f"{med([x[2] for x in b]):.0f} → {med([x[2] for x in a]):.0f} | "
              f"{med(rss):+.1f} ({min(rss):+.0f} to {max(rss):+.0f}) |")
        continue
    fmt = lambda xs: ", ".join(f"{x[0]:.0f}" for x in xs)
    print(f"| {k[0]} | {k[1]} | {k[2]} | {fmt(a)} | {fmt(b)} | {', '.join(f'{x:.2f}' for x in ratio)} | "
          f"{med(ratio):.2f}x | {med([x[1] for x in b]):.0f} → {med([x[1] for x in a]):.0f} | "
          f"{med([x[2] for x in b]):.0f} → {med([x[2] for x in a]):.0f} |")
