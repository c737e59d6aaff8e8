"""Fixtures of the Python package's tests: small models and treebanks the tests make themselves."""

import os

import numpy as np
import pytest

import sylva

# Five bracketed trees (labels 0..4 at every node) for the SST-format readers and the examples.
TREES = [
    "(3 (2 It) (4 (2 's) (3 good)))",
    "(1 (2 The) (0 (1 plot) (0 (1 is) (0 awful))))",
    "(4 (3 (2 a) (4 lovely)) (3 film))",
    "(2 (2 (2 the) (2 cast)) (2 (2 is) (2 here)))",
    "(0 (1 not) (0 (2 very) (1 good)))",
]


@pytest.fixture
def sst_dir(tmp_path):
    """A tiny SST directory (train/dev/test.txt)."""
    for name, lines in (("train.txt", TREES * 3), ("dev.txt", TREES[:3]), ("test.txt", TREES[2:])):
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    return tmp_path


def tiny_tree_model(dtype="float64", seed=3, hidden=4, vocab=6):
    """A Tree-FC-like model: h = tanh([h_l; h_r]·U + x·W), a classifier at every vertex."""
    ps = sylva.ParameterSet(dtype, seed)
    ps.add("E", [vocab, 3], sylva.Init.uniform(-0.5, 0.5), decay=False)
    ps.add("W", [3, hidden], sylva.Init.glorot())
    ps.add("U", [2 * hidden, hidden], sylva.Init.glorot())
    ps.add("Ws", [hidden, 5], sylva.Init.glorot())
    f = sylva.VertexFunction("cell", hidden, dtype)
    x = f.pull(3)
    h = sylva.tanh(x @ f.param(ps["W"]) + sylva.concat([f.gather(0), f.gather(1)]) @ f.param(ps["U"]))
    f.scatter(h)
    f.push(h)
    p = sylva.Program(dtype)
    hidden_rows = p.apply(f, sylva.lookup(p.param(ps["E"]), p.input_ids("words")))
    logits = hidden_rows @ p.param(ps["Ws"])
    loss = sylva.softmax_cross_entropy(logits, p.input_ids("labels"))
    return ps, f, p, logits, loss


def tiny_graphs():
    """Three small trees with words and labels."""
    out = []
    for k, children in enumerate(([[], [], [0, 1]], [[], [], [], [1, 2], [0, 3]], [[]])):
        g = sylva.InputGraph.from_children(children, f"tiny {k}")
        n = g.num_vertices
        g.set_ids("words", [(v + k) % 6 if not children[v] else -1 for v in range(n)])
        g.set_ids("labels", np.arange(n, dtype=np.int32) % 5)
        out.append(g)
    return out


def source_dir():
    return os.environ.get("SYLVA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
