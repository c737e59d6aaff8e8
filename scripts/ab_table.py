"""Table of scripts/ab_bench.sh's output: per configuration, units/s of A
and B per round, A/B per round and its median, and the medians of values
held and peak RSS.  Usage: python3 scripts/ab_table.py OUT [NAME_A NAME_B]"""
import collections
import statistics
import sys

path = sys.argv[1]
a_name, b_name = (sys.argv[2], sys.argv[3]) if len(sys.argv) > 3 else ("a", "b")
d = collections.defaultdict(lambda: collections.defaultdict(dict))
for line in open(path):
    p = line.split()
    if len(p) < 14 or p[0] != "round":
        continue
    d[(p[3], int(p[5]), int(p[7]))][int(p[1])][p[2]] = (float(p[9]), float(p[11]), float(p[13]))
med = statistics.median
print(f"| workload | h | batch | {a_name}, per round | {b_name}, per round | {a_name}/{b_name} per round | median "
      f"| values MB {b_name} → {a_name} | peak RSS MB {b_name} → {a_name} |")
print("| --- | ---: | ---: | --- | --- | --- | ---: | --- | --- |")
for k in d:
    rs = [r for r in sorted(d[k]) if a_name in d[k][r] and b_name in d[k][r]]
    a, b = [d[k][r][a_name] for r in rs], [d[k][r][b_name] for r in rs]
    ratio = [x[0] / y[0] for x, y in zip(a, b)]
    fmt = lambda xs: ", ".join(f"{x[0]:.0f}" for x in xs)
    print(f"| {k[0]} | {k[1]} | {k[2]} | {fmt(a)} | {fmt(b)} | {', '.join(f'{x:.2f}' for x in ratio)} | "
          f"{med(ratio):.2f}x | {med([x[1] for x in b]):.0f} → {med([x[1] for x in a]):.0f} | "
          f"{med([x[2] for x in b]):.0f} → {med([x[2] for x in a]):.0f} |")
