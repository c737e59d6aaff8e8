"""Tensors and parameters share memory with NumPy in both directions (buffer protocol, DLPack,
sylva.from_dlpack), and what a view holds stays alive however the objects are dropped."""

import gc

import numpy as np
import pytest

import sylva
from conftest import tiny_graphs, tiny_tree_model


@pytest.mark.parametrize("dtype,np_dtype", [("float32", np.float32), ("float64", np.float64), ("int32", np.int32)])
def test_tensor_views_share_memory(dtype, np_dtype):
    t = sylva.Tensor([3, 4], dtype)
    by_buffer, by_dlpack, by_method = np.asarray(t), np.from_dlpack(t), t.numpy()
    assert by_buffer.dtype == np_dtype and by_buffer.shape == (3, 4)
    for view in (by_dlpack, by_method):
        assert np.shares_memory(by_buffer, view) and view.dtype == np_dtype
    by_buffer[2, 1] = 7
    assert by_dlpack[2, 1] == 7 and by_method[2, 1] == 7 and t.clone().numpy()[2, 1] == 7
    assert t.__dlpack_device__() == (1, 0) and memoryview(t).format in "fdi"


def test_from_dlpack_shares_the_array():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = sylva.from_dlpack(a)
    assert t.shape == [3, 4] and t.dtype == "float64"
    assert np.shares_memory(np.asarray(t), a)
    a[1, 2] = -1.0
    assert np.asarray(t)[1, 2] == -1.0
    ids = sylva.from_dlpack(np.array([1, 2, 3], dtype=np.int32))
    assert ids.dtype == "int32" and list(np.asarray(ids)) == [1, 2, 3]


def test_from_dlpack_keeps_the_array_alive():
    a = np.arange(1 << 16, dtype=np.float32)
    t = sylva.from_dlpack(a)
    del a
    gc.collect()
    junk = [np.full(1 << 16, 9, dtype=np.float32) for _ in range(8)]  # would reuse freed memory
    np.testing.assert_array_equal(np.asarray(t), np.arange(1 << 16, dtype=np.float32))
    assert len(junk) == 8


def test_from_dlpack_rejects_what_it_cannot_share():
    with pytest.raises(TypeError):
        sylva.from_dlpack(np.zeros((3, 4), dtype=np.float32)[:, ::2])  # not C-contiguous
    with pytest.raises(sylva.Error, match=r"unsupported element type"):
        sylva.from_dlpack(np.zeros(3, dtype=np.int64))  # no int64 tensors


def test_parameters_are_read_and_written_without_copies():
    ps, _, p, _, loss = tiny_tree_model()
    w = ps["Ws"]
    view, via_value, via_dlpack = np.asarray(w), np.asarray(w.value), np.from_dlpack(w)
    assert np.shares_memory(view, via_value) and np.shares_memory(view, via_dlpack)
    batch = sylva.GraphBatch(tiny_graphs())
    ex = sylva.Executor(p, ps)
    ex.forward(batch, "eval")
    before = ex.scalar(loss)
    view[:] = 0.0  # uniform logits: the loss is ln 5 per labelled vertex
    ex.forward(batch, "eval")
    assert ex.scalar(loss) == pytest.approx(batch.num_vertices * np.log(5), rel=1e-12) and before != ex.scalar(loss)
    ps.zero_grad()
    ex.backward(loss)
    grad = np.asarray(w.grad)
    assert np.shares_memory(grad, np.asarray(ps["Ws"].grad)) and np.abs(grad).sum() > 0


def test_assigning_a_parameter_copies_in_and_checks_the_shape():
    ps = sylva.ParameterSet("float32")
    w = ps.add("W", [2, 3])
    view = np.asarray(w)
    w.value = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(view, [[0, 1, 2], [3, 4, 5]])
    w.value = np.ones((3, 2), dtype=np.float64).T  # a transpose of another dtype: converted, then copied
    np.testing.assert_array_equal(view, np.ones((2, 3)))
    with pytest.raises(sylva.Error, match=r"parameter 'W': expected shape \[2, 3\], got \[3, 2\]"):
        w.value = np.zeros((3, 2), dtype=np.float32)


def test_a_tensor_outlives_its_executor():
    ps, _, p, logits, _ = tiny_tree_model()
    ex = sylva.Executor(p, ps)
    ex.forward(sylva.GraphBatch(tiny_graphs()), "eval")
    value = ex.value(logits)
    view = np.asarray(value)
    expected = view.copy()
    del ex, value
    gc.collect()
    np.testing.assert_array_equal(view, expected)


def test_parameters_deleted_while_viewed():
    ps, _, p, _, loss = tiny_tree_model()
    view = np.asarray(ps["U"])
    grad_tensor = ps["U"].grad
    expected = view.copy()
    del ps, p, loss
    gc.collect()
    np.testing.assert_array_equal(view, expected)  # the view keeps the parameter (and its set) alive
    view += 1.0
    np.testing.assert_array_equal(view, expected + 1.0)
    assert grad_tensor.shape == list(expected.shape)


def test_symbols_keep_their_graphs_alive():
    def build():
        f = sylva.VertexFunction("f", 2, "float64")
        return f.pull(3)  # f itself is dropped

    x = build()
    gc.collect()
    assert x.cols == 3 and sylva.tanh(x).cols == 3


def test_batches_keep_their_graphs_alive():
    ps, _, p, _, loss = tiny_tree_model()
    batch = sylva.GraphBatch(tiny_graphs())  # the list and its graphs are dropped
    gc.collect()
    trainer = sylva.Trainer(p, ps, loss, sylva.Sgd(lr=0.1))
    assert trainer.step(batch).vertices == 9


def test_executors_keep_program_and_parameters_alive():
    ps, _, p, _, loss = tiny_tree_model()
    ex = sylva.Executor(p, ps)
    trainer = sylva.Trainer(p, ps, loss, sylva.Adam())
    del ps, p
    gc.collect()
    batch = sylva.GraphBatch(tiny_graphs())
    ex.forward(batch, "train")
    ex.backward(loss)
    assert trainer.step(batch).samples == 3
    executor = trainer.executor
    del trainer
    gc.collect()
    assert executor.scalar(loss) > 0  # the trainer's executor keeps the trainer alive
