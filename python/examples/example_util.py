"""Helpers the Python examples share (as examples/common does for the C++ ones)."""

import os

import sylva


def find_dataset(name, files, flag, who):
    """The directory of dataset `name` holding `files`: --data alone if given (`flag`), else
    $SYLVA_DATA/<name>, else shared/data/<name> above the checkout; sylva.Error naming every place looked."""
    here = os.path.dirname(os.path.abspath(__file__))
    if flag:
        candidates = [flag]
    else:
        candidates = [os.path.join(os.environ["SYLVA_DATA"], name)] if os.environ.get("SYLVA_DATA") else []
        candidates += [os.path.join(here, *[".."] * up, "shared", "data", name) for up in range(2, 5)]
    for c in candidates:
        if all(os.path.isfile(os.path.join(c, f)) for f in files):
            return os.path.normpath(c)
    raise sylva.Error(f"[{who}] {name.upper()} not found; looked in: "
                      + ", ".join(os.path.normpath(c) for c in candidates) + " (set --data DIR or SYLVA_DATA)")


def format_duration(seconds):
    """"4m07s", or "1h02m" from an hour on (the C++ examples' format)."""
    t = int(round(max(0.0, seconds)))
    return f"{t // 3600}h{(t // 60) % 60:02d}m" if t >= 3600 else f"{t // 60}m{t % 60:02d}s"
