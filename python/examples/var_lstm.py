#!/usr/bin/env python3
"""Var-LSTM (Cavs): a stacked LSTM language model on Penn Treebank, one variable-length chain per
sentence, batched by BFS without padding -- written with Sylva from Python the way
examples/03_var_lstm is written in C++ (the same model, flags, data order and log lines).
Default flags are Zaremba et al.'s "small" configuration.

    python python/examples/var_lstm.py --epochs 1 --max-batches 200
"""

import argparse
import math
import os
import sys
import time

import numpy as np

import sylva
from example_util import find_dataset, format_duration


def read_ptb(path, vocab, grow):
    """Sentences as id arrays, each ending with <eos>."""
    eos = vocab.add("<eos>") if grow else vocab.id("<eos>")
    out = []
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            ids = vocab.add_all(line.split()) if grow else vocab.ids(line.split())
            if np.any(ids < 0):
                raise sylva.Error(f"{path}:{line_no}: unknown word and the vocabulary has no <unk>")
            out.append(np.append(ids, np.int32(eos)))
    if not out:
        raise sylva.Error(f"[ptb] {path} holds no sentences")
    return out


def sentence_chains(sentences, eos, source):
    """One chain per sentence: vertex i reads word i-1 (<eos> first) and predicts word i."""
    out = []
    for i, s in enumerate(sentences):
        g = sylva.InputGraph.chain(len(s), f"{source}:{i + 1}")
        g.set_ids("words", np.concatenate([[eos], s[:-1]]).astype(np.int32))
        g.set_ids("labels", s)
        out.append(g)
    return out


def add_params(ps, a, vocab):
    init = sylva.Init.uniform(-a.init_scale, a.init_scale)
    ps.add("E", [vocab, a.embed], init)
    for layer in range(1, a.layers + 1):
        ps.add(f"W{layer}", [a.embed if layer == 1 else a.hidden, 4 * a.hidden], init)
        ps.add(f"U{layer}", [a.hidden, 4 * a.hidden], init)
        ps.add(f"b{layer}", [4 * a.hidden], init)
    ps.add("Ws", [a.hidden, vocab], init)
    ps.add("bs", [vocab], init)


def lstm_cell(ps, a, layer, dtype):
    """Pulls the projected input x·W + b, gathers [h; c] from the predecessor."""
    f = sylva.VertexFunction(f"lstm{layer}", 2 * a.hidden, dtype)
    projected = f.pull(4 * a.hidden)
    U = f.param(ps[f"U{layer}"])
    h, c = sylva.split(f.gather(0), 2)
    i, fg, o, u = sylva.split(projected + h @ U, 4)
    c2 = sylva.sigmoid(fg) * c + sylva.sigmoid(i) * sylva.tanh(u)
    h2 = sylva.sigmoid(o) * sylva.tanh(c2)
    f.scatter(sylva.concat([h2, c2]))
    f.push(h2)
    return f


class Model:
    """Each layer is its own vertex function; the input projections and the softmax are program-level GEMMs."""

    def __init__(self, ps, a, dtype):
        p = self.program = sylva.Program(dtype)
        E = p.param(ps["E"])
        words = p.input_ids("words")
        x = sylva.dropout(sylva.lookup(E, words), a.dropout)
        self.cells = []
        for layer in range(1, a.layers + 1):
            self.cells.append(lstm_cell(ps, a, layer, dtype))
            W, b = p.param(ps[f"W{layer}"]), p.param(ps[f"b{layer}"])
            x = sylva.dropout(p.apply(self.cells[-1], x @ W + b), a.dropout)
        Ws, bs = p.param(ps["Ws"]), p.param(ps["bs"])
        logits = x @ Ws + bs
        self.loss = sylva.softmax_cross_entropy(logits, p.input_ids("labels"))


def predicted(batch):
    return int(np.sum(batch.ids("labels") >= 0))


def perplexity(trainer, samples, batch):
    loss, tokens = 0.0, 0
    for b in range(0, len(samples), batch):
        gb = sylva.GraphBatch(samples[b:b + batch])
        loss += trainer.evaluate(gb)
        tokens += predicted(gb)
    return math.exp(loss / tokens)


def parse_args(argv):
    ap = argparse.ArgumentParser(description="Var-LSTM language model on PTB: one variable-length chain per "
                                             "sentence, no padding")
    ap.add_argument("--data", help="PTB directory with ptb.{train,valid,test}.txt (default: $SYLVA_DATA/ptb)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--embed", type=int, default=200)
    ap.add_argument("--hidden", type=int, default=200)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--init-scale", type=float, default=0.1)
    ap.add_argument("--batch", type=int, default=20, help="sentences per minibatch")
    ap.add_argument("--epochs", type=int, default=13)
    ap.add_argument("--lr", type=float, default=1.0, help="SGD learning rate")
    ap.add_argument("--lr-decay", type=float, default=0.5)
    ap.add_argument("--decay-after", type=int, default=4)
    ap.add_argument("--clip", type=float, default=5.0)
    ap.add_argument("--policy", choices=["bfs", "serial"], default="bfs")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-batches", type=int, default=0, help="minibatches per epoch (0 = all)")
    ap.add_argument("--max-train", type=int, default=0, help="use only the first N training sentences (0 = all)")
    ap.add_argument("--checkpoint", help="write the parameters here after every epoch (safetensors)")
    ap.add_argument("--progress-seconds", type=float, default=10.0)
    ap.add_argument("--float64", action="store_true")
    ap.add_argument("--profile", action="store_true")
    return ap.parse_args(argv)


def train_epoch(trainer, train, order, batches, epoch, lr, a):
    start = last = time.perf_counter()
    loss, tokens = 0.0, 0
    for b in range(batches):
        gb = sylva.GraphBatch([train[i] for i in order[b * a.batch:(b + 1) * a.batch]])
        r = trainer.step(gb)
        loss += r.loss
        tokens += predicted(gb)
        now = time.perf_counter()
        if now - last >= a.progress_seconds or b + 1 == batches:
            spent = now - start
            left = spent * (batches - b - 1) / (b + 1)
            all_left = left + (a.epochs - epoch) * (spent + left)
            print(f"[var_lstm] epoch {epoch}/{a.epochs} batch {b + 1}/{batches} | lr {lr:.4g} | train ppl "
                  f"{math.exp(loss / tokens):.2f} | |g| {r.grad_norm:.2f} | {tokens / spent:.0f} words/s | epoch ETA "
                  f"{format_duration(left)}, total ETA {format_duration(all_left)}", flush=True)
            last = now
    return loss, tokens, time.perf_counter() - start


def main(argv=None):
    a = parse_args(argv)
    dtype = "float64" if a.float64 else "float32"
    ptb = find_dataset("ptb", ("ptb.train.txt", "ptb.valid.txt", "ptb.test.txt"), a.data, "var_lstm")
    print(f"loading PTB from {ptb}")
    vocab = sylva.Vocabulary()
    train_s = read_ptb(os.path.join(ptb, "ptb.train.txt"), vocab, True)
    vocab.set_unknown("<unk>")
    valid_s = read_ptb(os.path.join(ptb, "ptb.valid.txt"), vocab, False)
    test_s = read_ptb(os.path.join(ptb, "ptb.test.txt"), vocab, False)
    eos = vocab.id("<eos>")
    train = sentence_chains(train_s, eos, "ptb.train.txt")
    valid, test = sentence_chains(valid_s, eos, "ptb.valid.txt"), sentence_chains(test_s, eos, "ptb.test.txt")
    if 0 < a.max_train < len(train):
        train = train[:a.max_train]
    print(f"data: vocab {len(vocab)} | train {len(train_s)} sentences, {sum(len(s) for s in train_s)} tokens -> "
          f"{len(train)} chains | valid {len(valid)} chains | test {len(test)} chains")

    ps = sylva.ParameterSet(dtype, a.seed)
    add_params(ps, a, len(vocab))
    model = Model(ps, a, dtype)
    trainer = sylva.Trainer(model.program, ps, model.loss, sylva.Sgd(lr=a.lr), policy=a.policy, device=a.device,
                            seed=a.seed, threads=a.threads, clip_norm=a.clip, sync_parameters=False)
    print(f"[var_lstm] model: {a.layers} layers, embed {a.embed}, hidden {a.hidden}, vocab {len(vocab)}, dropout "
          f"{a.dropout:g}, params {ps.numel()} | sgd lr {a.lr:g} (x{a.lr_decay:g} after epoch {a.decay_after}) clip "
          f"{a.clip:g} batch {a.batch} | policy {a.policy} threads {a.threads} {a.device} seed {a.seed}", flush=True)
    rng = sylva.Rng(a.seed)
    batches = (len(train) + a.batch - 1) // a.batch
    if a.max_batches > 0:
        batches = min(batches, a.max_batches)
    total_start, words_per_second, valid_ppl, train_seconds = time.perf_counter(), 0.0, float("nan"), 0.0
    profiler = sylva.Profiler() if a.profile else None
    for epoch in range(1, a.epochs + 1):
        lr = a.lr * a.lr_decay ** max(epoch - a.decay_after, 0)
        trainer.optimizer.learning_rate = lr
        if profiler:
            profiler.reset()
            trainer.executor.set_profiler(profiler)
        loss, tokens, seconds = train_epoch(trainer, train, rng.permutation(len(train)), batches, epoch, lr, a)
        if profiler:
            trainer.executor.set_profiler(None)
            profiler.add_wall_time(seconds)
            print(f"[var_lstm] profile of epoch {epoch} (training steps only):\n{profiler.report()}", end="")
        words_per_second, train_seconds = tokens / seconds, train_seconds + seconds
        valid_ppl = perplexity(trainer, valid, 64)
        trainer.sync_parameters()
        if a.checkpoint:
            sylva.save_checkpoint(ps, a.checkpoint, {"epoch": str(epoch), "valid_ppl": str(valid_ppl)})
        print(f"[var_lstm] epoch {epoch} done in {format_duration(seconds)} | lr {lr:.4g} | train ppl "
              f"{math.exp(loss / tokens):.2f} | valid ppl {valid_ppl:.2f} | {words_per_second:.0f} words/s", flush=True)
    test_ppl = perplexity(trainer, test, 64)
    total = time.perf_counter() - total_start
    print(f"[var_lstm] test ppl {test_ppl:.2f} (final parameters, epoch {a.epochs}) | training "
          f"{format_duration(train_seconds)}, total {format_duration(total)}")
    print(f"var_lstm: test perplexity {test_ppl:.2f} after {a.epochs} epochs | valid {valid_ppl:.2f} | "
          f"{words_per_second:.0f} words/s in the last epoch | total {format_duration(total)}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except sylva.Error as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
