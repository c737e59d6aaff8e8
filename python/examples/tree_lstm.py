#!/usr/bin/env python3
"""Tree-LSTM sentiment classification on the Stanford Sentiment Treebank
(Tai et al. 2015, binary constituency Tree-LSTM, softmax at every node),
written with Sylva from Python the way examples/02_tree_lstm is written in
C++: the same model, flags, data order and log lines, so that for the same
seed both compute the same numbers.

    python python/examples/tree_lstm.py --epochs 10
"""

import argparse
import os
import sys
import time

import numpy as np

import sylva
from example_util import find_dataset, format_duration


def load_split(path, vocab, grow):
    """Trees of one split with per-vertex "words" (-1 at internal nodes); the training split grows the vocabulary."""
    trees = sylva.read_bracketed_trees(path)
    if not trees:  # as the C++ example: no run that trains on nothing or scores 0 of 0
        raise sylva.Error(f"[sst] {path} holds no trees: nothing to "
                          + ("train on" if grow else "evaluate on"))
    for t in trees:
        t.graph.set_ids("words", vocab.add_all(t.tokens) if grow else vocab.ids(t.tokens))
    return [t.graph for t in trees]


def add_params(ps, a, vocab):
    gates = 5 if a.cell == "tai" else 3
    h = a.hidden
    ps.add("E", [vocab, a.dim], sylva.Init.uniform(-0.05, 0.05), decay=False, lr_scale=a.emb_lr_scale)
    ps.add("W", [a.dim, gates * h], sylva.Init.glorot())
    ps.add("U", [2 * h, gates * h], sylva.Init.glorot())
    ps.add("b", [gates * h], decay=False)
    if a.cell == "dynet":
        ps.add("Ufl", [h, h], sylva.Init.glorot())
        ps.add("Ufr", [h, h], sylva.Init.glorot())
        ps.add("bf", [h], decay=False)
    ps.add("Ws", [h, 5], sylva.Init.glorot())
    ps.add("bs", [5], decay=False)


def tree_lstm_cell(ps, a, dtype):
    """tai: five gates from x·W + [h_l; h_r]·U + b; dynet: three, and one forget gate per child from its h."""
    f = sylva.VertexFunction("tree_lstm", 2 * a.hidden, dtype)
    x = f.pull(a.dim)
    hl, cl = sylva.split(f.gather(0), 2)
    hr, cr = sylva.split(f.gather(1), 2)
    hh2 = sylva.concat([hl, hr])
    W, U, b = f.param(ps["W"]), f.param(ps["U"]), f.param(ps["b"])
    xw = x @ W
    hu = hh2 @ U
    gates = sylva.split(xw + hu + b, 5 if a.cell == "tai" else 3)
    if a.cell == "tai":
        i, fl, fr, o, u = gates
        c = sylva.sigmoid(i) * sylva.tanh(u) + sylva.sigmoid(fl) * cl + sylva.sigmoid(fr) * cr
    else:
        i, o, u = gates
        bf = f.param(ps["bf"])
        fl = sylva.sigmoid(hl @ f.param(ps["Ufl"]) + bf)
        fr = sylva.sigmoid(hr @ f.param(ps["Ufr"]) + bf)
        c = sylva.sigmoid(i) * sylva.tanh(u) + fl * cl + fr * cr
    h = sylva.sigmoid(o) * sylva.tanh(c)
    f.scatter(sylva.concat([h, c]))
    f.push(h)
    return f


class Model:
    """Nodes are made in the C++ example's order (tree_lstm_model.cc), which keys dropout's random streams."""

    def __init__(self, ps, a, dtype):
        self.cell = tree_lstm_cell(ps, a, dtype)
        p = self.program = sylva.Program(dtype)
        words = p.input_ids("words")
        E = p.param(ps["E"])
        x = sylva.dropout(sylva.lookup(E, words), a.emb_dropout)
        hidden = p.apply(self.cell, x)
        Ws, bs = p.param(ps["Ws"]), p.param(ps["bs"])
        self.logits = sylva.dropout(hidden, a.dropout) @ Ws + bs
        self.loss = sylva.softmax_cross_entropy(self.logits, p.input_ids("labels"))


def batches_of(graphs, order, size):
    return [sylva.GraphBatch([graphs[i] for i in order[b:b + size]]) for b in range(0, len(order), size)]


class RootAccuracy:
    def __init__(self):
        self.fine_correct = self.fine_total = self.binary_correct = self.binary_total = 0

    def add(self, batch, logits):
        """Root accuracy of one batch: fine-grained (5 classes) and binary (neutral roots left out)."""
        roots = batch.sample_offsets()[1:] - 1
        gold = batch.ids("labels")[roots]
        z = logits[roots] - logits[roots].max(axis=1, keepdims=True)
        p = np.exp(z)
        keep = gold >= 0
        self.fine_correct += int(np.sum((np.argmax(p, axis=1) == gold) & keep))
        self.fine_total += int(np.sum(keep))
        polar = keep & (gold != 2)
        positive = p[:, 3] + p[:, 4] > p[:, 0] + p[:, 1]
        self.binary_correct += int(np.sum((positive == (gold > 2)) & polar))
        self.binary_total += int(np.sum(polar))

    def fine(self):
        return self.fine_correct / self.fine_total if self.fine_total else 0.0

    def binary(self):
        return self.binary_correct / self.binary_total if self.binary_total else 0.0


def evaluate(trainer, model, graphs):
    acc = RootAccuracy()
    for b in batches_of(graphs, list(range(len(graphs))), 256):
        trainer.evaluate(b)
        acc.add(b, trainer.value(model.logits).numpy())
    return acc


def parse_args(argv):
    ap = argparse.ArgumentParser(description="Tree-LSTM sentiment classification (Tai et al. 2015) with Sylva")
    ap.add_argument("--data", help="SST directory with train.txt/dev.txt/test.txt (default: $SYLVA_DATA/sst)")
    ap.add_argument("--dim", type=int, default=300, help="word vector size d")
    ap.add_argument("--hidden", type=int, default=150, help="Tree-LSTM memory size h")
    ap.add_argument("--cell", choices=["tai", "dynet"], default="tai")
    ap.add_argument("--batch", type=int, default=25, help="sentences per minibatch")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--optimizer", choices=["adagrad", "adam", "sgd"], default="adagrad")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--emb-lr-scale", type=float, default=1.0, help="learning-rate multiplier of the embeddings")
    ap.add_argument("--l2", type=float, default=1e-4, help="L2 weight decay (not on embeddings and biases)")
    ap.add_argument("--clip", type=float, default=0.0, help="gradient-norm clipping (0 = off)")
    ap.add_argument("--dropout", type=float, default=0.5, help="dropout on the classifier input")
    ap.add_argument("--emb-dropout", type=float, default=0.0, help="dropout on the word vectors")
    ap.add_argument("--policy", choices=["bfs", "serial"], default="bfs")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-train", type=int, default=0, help="use only the first N training trees (0 = all)")
    ap.add_argument("--checkpoint", help="write the best-dev parameters here (safetensors)")
    ap.add_argument("--progress-seconds", type=float, default=5.0)
    ap.add_argument("--float64", action="store_true", help="compute in float64")
    ap.add_argument("--profile", action="store_true", help="print where the training time goes after every epoch")
    ap.add_argument("--check-numerics", action="store_true", help="stop at the first NaN or infinity")
    a = ap.parse_args(argv)
    for name in ("dim", "hidden", "batch", "epochs", "threads"):
        if getattr(a, name) <= 0:
            ap.error(f"--{name} must be positive")
    return a


def make_optimizer(name, lr):
    return {"adagrad": sylva.Adagrad, "adam": sylva.Adam, "sgd": sylva.Sgd}[name](lr=lr)


def train_epoch(trainer, batches, epoch, total, a, log):
    start = last = time.perf_counter()
    loss_sum, sentences = 0.0, 0
    for b, batch in enumerate(batches):
        r = trainer.step(batch)
        loss_sum += r.loss
        sentences += r.samples
        now = time.perf_counter()
        if now - last >= a.progress_seconds or b + 1 == len(batches):
            rate = sentences / (now - start)
            left = (total - sentences) / rate if rate > 0 else 0
            print(f"epoch {epoch} batch {b + 1}/{len(batches)} loss/tree {loss_sum / sentences:.4f} | "
                  f"{rate:.1f} sent/s | epoch ETA {format_duration(left)}", file=log, flush=True)
            last = now
    return sentences, time.perf_counter() - start


def main(argv=None):
    a = parse_args(argv)
    dtype = "float64" if a.float64 else "float32"
    sst = find_dataset("sst", ("train.txt", "dev.txt", "test.txt"), a.data, "tree_lstm")
    print(f"loading SST from {sst}")
    vocab = sylva.Vocabulary()
    vocab.set_unknown("<unk>")
    train = load_split(os.path.join(sst, "train.txt"), vocab, True)
    dev = load_split(os.path.join(sst, "dev.txt"), vocab, False)
    test = load_split(os.path.join(sst, "test.txt"), vocab, False)
    if 0 < a.max_train < len(train):
        train = train[:a.max_train]
    print(f"data: {sst} | train {len(train)} dev {len(dev)} test {len(test)} trees | vocab {len(vocab)}")

    ps = sylva.ParameterSet(dtype, a.seed)
    add_params(ps, a, len(vocab))
    model = Model(ps, a, dtype)
    trainer = sylva.Trainer(model.program, ps, model.loss, make_optimizer(a.optimizer, a.lr),
                            policy=a.policy, device=a.device, seed=a.seed, threads=a.threads,
                            check_numerics=a.check_numerics, clip_norm=a.clip, weight_decay=a.l2,
                            sync_parameters=False)
    print(f"model: {a.cell} cell d={a.dim} h={a.hidden} params={ps.numel()} | {a.optimizer} lr {a.lr:g} "
          f"batch {a.batch} l2 {a.l2:g} dropout {a.dropout:g} | policy {a.policy} threads {a.threads} {a.device}")

    rng = sylva.Rng(a.seed)
    best_epoch, best_dev, best_test = 0, None, None
    total_start = time.perf_counter()
    profiler = sylva.Profiler() if a.profile else None
    for epoch in range(1, a.epochs + 1):
        if profiler:
            profiler.reset()
            trainer.executor.set_profiler(profiler)
        batches = batches_of(train, rng.permutation(len(train)), a.batch)
        sentences, train_s = train_epoch(trainer, batches, epoch, len(train), a, sys.stdout)
        if profiler:
            trainer.executor.set_profiler(None)
            profiler.add_wall_time(train_s)
            print(f"profile of epoch {epoch} (training steps only):\n{profiler.report()}", end="")
        trainer.sync_parameters()
        dev_acc, test_acc = evaluate(trainer, model, dev), evaluate(trainer, model, test)
        best = best_epoch == 0 or dev_acc.fine() > best_dev.fine()
        if best:
            best_epoch, best_dev, best_test = epoch, dev_acc, test_acc
            if a.checkpoint:
                sylva.save_checkpoint(ps, a.checkpoint, {"epoch": str(epoch)})
        print(f"epoch {epoch} done in {format_duration(train_s)} ({sentences / train_s:.1f} sent/s) | dev root fine "
              f"{100 * dev_acc.fine():.2f}% binary {100 * dev_acc.binary():.2f}%{' (best so far)' if best else ''}",
              flush=True)
    t, total = best_test, time.perf_counter() - total_start
    print(f"best dev epoch {best_epoch}: test root fine-grained {100 * t.fine():.2f}% ({t.fine_correct}/"
          f"{t.fine_total}), binary {100 * t.binary():.2f}% ({t.binary_correct}/{t.binary_total}) | total "
          f"{int(total) // 60}m{int(total) % 60:02d}s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except sylva.Error as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
