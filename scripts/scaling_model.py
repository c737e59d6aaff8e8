#!/usr/bin/env python3
"""A paper model of data-parallel training on 8-64 GPUs (docs/distributed.md).

Time per step on p GPUs = the slowest rank's compute + the gradient
collectives + the optimiser step, with each rank's share taken from real
SST trees / PTB sentences split the way Sylva splits them
(dist::shard_by_work: longest first onto the least loaded rank, by vertex
count).

  compute(share) = levels(share) * kernels_per_level * t_kernel
                   + vertices(share) * flops_per_vertex / gpu_flops
  collectives    = buckets * latency + 2 (p-1)/p * dense_bytes / busbw   (ring allreduce)
                   + latency + (p-1)/p * row_bytes_per_sample * batch / busbw   (allgatherv of rows)

levels(share) is what a dynamic batch cannot shrink: Sylva runs one BFS
level (tree height, or chain position per LSTM layer) after another, and a
level of a few vertices costs about a kernel launch per op whatever the GPU.

What is measured and what is assumed (printed with the table):
  measured here, from the data: levels and vertices of every share;
  measured here, by the CPU runs of bench_distributed.sh (--profile):
    dense gradient bytes and embedding-row bytes per step, and the ops the
    executor runs per step (hence kernels per level);
  counted from the cells: flops per vertex;
  assumed (no GPU was measured): t_kernel, gpu_flops, and NCCL's bus
    bandwidth and latency inside a node (p <= 8, NVLink) and across nodes
    (p > 8, InfiniBand) -- override them with the flags once the device
    check has measured them.

  python3 scripts/scaling_model.py [--data DIR] [--batch 64] [--t-kernel-us 5] ...
"""
import argparse
import heapq
import os
import random
import statistics
import sys


def sst_trees(path):
    """(vertices, height) of every tree in an SST file (one s-expression per line)."""
    out = []
    with open(path) as f:
        for line in f:
            depth = height = nodes = 0
            for ch in line:
                if ch == "(":
                    depth += 1
                    nodes += 1
                    height = max(height, depth)
                elif ch == ")":
                    depth -= 1
            if nodes:
                out.append((nodes, height))
    return out


def ptb_chains(path, layers):
    """(vertices, levels) of every PTB sentence as the Var-LSTM runs it:
    words + <eos> vertices per layer, one level per position per layer."""
    out = []
    with open(path) as f:
        for line in f:
            n = len(line.split()) + 1
            out.append((n * layers, n * layers))
    return out


def shard_by_work(samples, p):
    """Sylva's split: longest first, each onto the least loaded rank (ties: the lowest rank)."""
    heap = [(0, r) for r in range(p)]
    levels = [0] * p
    work = [0] * p
    for v, lv in sorted(samples, key=lambda s: -s[0]):
        w, r = heapq.heappop(heap)
        work[r] = w + v
        levels[r] = max(levels[r], lv)
        heapq.heappush(heap, (work[r], r))
    return list(zip(work, levels))


def collectives_s(p, a, batch):
    if p == 1:
        return 0.0
    inside = p <= 8
    bw = (a.busbw_node_gbs if inside else a.busbw_net_gbs) * 1e9
    lat = (a.latency_node_us if inside else a.latency_net_us) * 1e-6
    buckets = max(1, -(-a.dense_mb // 4.0))  # 4 MiB buckets
    ring = 2.0 * (p - 1) / p * a.dense_mb * 1e6 / bw
    rows = (p - 1) / p * a.row_kb_per_sample * 1e3 * batch / bw
    return buckets * lat + ring + lat + rows


def step(samples, p, a, rng, batch):
    times, levels = [], []
    for _ in range(a.batches):
        share = shard_by_work(rng.sample(samples, batch), p)
        compute = max(lv * a.kernels_per_level * a.t_kernel_us * 1e-6 + v * a.mflop_per_vertex * 1e6 /
                      (a.gpu_tflops * 1e12) for v, lv in share)
        times.append(compute + collectives_s(p, a, batch) + a.optimiser_us * 1e-6)
        levels.append(max(lv for _, lv in share))
    return statistics.mean(times), statistics.mean(levels)


WORKLOADS = {
    # name: (loader, measured dense MB / row KB per sample / ops per step at batch 64, MFLOP per vertex fwd+bwd)
    # Tree-LSTM d = h = 150: 5 gates from [x; h_l; h_r] (450 x 750), backward 2x forward.
    "tree_lstm": dict(dense_mb=1.356, row_kb_per_sample=6.7, mflop_per_vertex=2.0),
    # Var-LSTM 2 x 200, vocabulary 10,000: per token and layer 4 gates from [x; h] (400 x 800),
    # plus the softmax (200 x 10,000) once per token (counted per layer-vertex: / 2).
    "var_lstm": dict(dense_mb=10.607, row_kb_per_sample=9.3, mflop_per_vertex=3.0 * (1.28 / 2 + 4.0 / 2)),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--data", default=os.environ.get("SYLVA_DATA", os.path.join(here, "..", "..", "shared", "data")))
    ap.add_argument("--batch", type=int, default=64, help="global batch (strong scaling)")
    ap.add_argument("--batches", type=int, default=200, help="random minibatches per point")
    ap.add_argument("--kernels-per-level", type=float, default=9.0,
                    help="GPU kernels per BFS level, forward + backward (measured: op calls per step / levels)")
    ap.add_argument("--t-kernel-us", type=float, default=5.0, help="ASSUMED: one small kernel, launch included")
    ap.add_argument("--gpu-tflops", type=float, default=30.0, help="ASSUMED: sustained FP32 rate on the big GEMMs")
    ap.add_argument("--busbw-node-gbs", type=float, default=150.0, help="ASSUMED: NCCL allreduce bus bandwidth, NVLink, 1-10 MB")
    ap.add_argument("--busbw-net-gbs", type=float, default=25.0, help="ASSUMED: the same across nodes (InfiniBand)")
    ap.add_argument("--latency-node-us", type=float, default=15.0, help="ASSUMED: one NCCL collective inside a node")
    ap.add_argument("--latency-net-us", type=float, default=40.0, help="ASSUMED: one NCCL collective across nodes")
    ap.add_argument("--optimiser-us", type=float, default=200.0, help="ASSUMED: the optimiser step's kernels")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    sst = os.path.join(a.data, "sst", "train.txt")
    ptb = os.path.join(a.data, "ptb", "ptb.train.txt")
    for f in (sst, ptb):
        if not os.path.exists(f):
            sys.exit(f"scaling_model: {f} not found (set SYLVA_DATA or --data)")
    data = {"tree_lstm": sst_trees(sst), "var_lstm": ptb_chains(ptb, 2)}
    print(f"assumed: t_kernel {a.t_kernel_us} us, {a.kernels_per_level} kernels per level, GPU {a.gpu_tflops} TFLOP/s, "
          f"NCCL busbw {a.busbw_node_gbs} GB/s in a node / {a.busbw_net_gbs} GB/s across, latency "
          f"{a.latency_node_us} / {a.latency_net_us} us, optimiser {a.optimiser_us} us; mean of {a.batches} batches")
    for name, samples in data.items():
        for k, v in WORKLOADS[name].items():
            setattr(a, k, v)
        print(f"\n{name}: {len(samples)} samples; dense gradient {a.dense_mb} MB, rows {a.row_kb_per_sample} KB/sample, "
              f"{a.mflop_per_vertex:.2f} MFLOP per vertex")
        print("   p | strong: global batch %3d                              | weak: %d per GPU" % (a.batch, a.batch))
        print("     | levels  compute ms  comm ms  step ms  speedup  effic. | step ms  samples/s  effic.")
        rng = random.Random(a.seed)
        base_strong = base_weak = None
        for p in (1, 2, 4, 8, 16, 32, 64):
            t, lv = step(samples, p, a, rng, a.batch)
            comm = collectives_s(p, a, a.batch)
            tw, _ = step(samples, p, a, rng, a.batch * p) if a.batch * p <= len(samples) else (float("nan"), 0)
            base_strong = base_strong or t
            base_weak = base_weak or tw
            print(f"  {p:2d} | {lv:6.1f}  {1e3 * (t - comm - a.optimiser_us * 1e-6):10.2f}  {1e3 * comm:7.2f}  "
                  f"{1e3 * t:7.2f}  {base_strong / t:6.2f}x  {base_strong / t / p:5.0%} | {1e3 * tw:7.2f}  "
                  f"{a.batch * p / tw:9.0f}  {base_weak / tw:5.0%}")


if __name__ == "__main__":
    main()
