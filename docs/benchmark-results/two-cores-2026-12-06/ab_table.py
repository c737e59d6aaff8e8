import csv, glob, os, re, statistics, sys
d = sys.argv[1]
rows = {}
for f in glob.glob(os.path.join(d, "*-r*.csv")):
    m = re.match(r"(before|after)-(\w+)-h(\d+)-r(\d)\.csv", os.path.basename(f))
    which, cell, h, rnd = m.groups()
    for r in csv.DictReader(open(f)):
        if r["mode"] != "train": continue
        rows.setdefault((cell, int(h), int(r["batch"])), {}).setdefault(which, {})[int(rnd)] = float(r["samples_per_s"])
print("| cell | h | batch | before, trees/s | after, trees/s | after / before per round |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for k in sorted(rows):
    b, a = rows[k].get("before", {}), rows[k].get("after", {})
    ratios = [a[r] / b[r] for r in sorted(set(a) & set(b))]
    fmt = lambda v: f"{statistics.median(v):.1f} ({min(v):.0f}–{max(v):.0f})"
    print(f"| {k[0]} | {k[1]} | {k[2]} | {fmt(list(b.values()))} | {fmt(list(a.values()))} | **{statistics.median(ratios):.2f}×** ({min(ratios):.2f}–{max(ratios):.2f}) |")
