# Table of ab.sh's output: per configuration, units/s with the option on
# and off per round, on/off per round and its median, and the medians of
# values held and peak RSS.
import sys, collections, statistics
d = collections.defaultdict(lambda: collections.defaultdict(dict))
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) < 14 or p[0] != "round": continue
    d[(p[3], int(p[5]), int(p[7]))][int(p[1])][p[2]] = (float(p[9]), float(p[11]), float(p[13]))
med = statistics.median
print("| workload | h | batch | on, per round | off, per round | on/off per round | median | values MB off → on | peak RSS MB off → on |")
print("| --- | ---: | ---: | --- | --- | --- | ---: | --- | --- |")
for k in d:
    rs = sorted(d[k])
    on, off = [d[k][r]["on"] for r in rs], [d[k][r]["off"] for r in rs]
    ratio = [a[0] / b[0] for a, b in zip(on, off)]
    fmt = lambda xs: ", ".join(f"{x[0]:.0f}" for x in xs)
    print(f"| {k[0]} | {k[1]} | {k[2]} | {fmt(on)} | {fmt(off)} | {', '.join(f'{x:.2f}' for x in ratio)} | "
          f"{med(ratio):.2f}x | {med([x[1] for x in off]):.0f} → {med([x[1] for x in on]):.0f} | "
          f"{med([x[2] for x in off]):.0f} → {med([x[2] for x in on]):.0f} |")
