"""Bad input raises sylva.Error with the library's message (what and where), never a crash."""

import numpy as np
import pytest

import sylva
from conftest import tiny_graphs, tiny_tree_model


def test_error_is_a_python_exception_type():
    assert issubclass(sylva.Error, RuntimeError)


def test_cyclic_and_out_of_range_graphs():
    with pytest.raises(sylva.Error, match=r"sample loop: cycle .*0 -> 1 -> 0"):
        sylva.InputGraph.from_children([[1], [0]], "loop")
    with pytest.raises(sylva.Error, match=r"out of range"):
        sylva.InputGraph.from_children([[5]], "far")
    with pytest.raises(sylva.Error, match=r"out of range"):
        sylva.InputGraph.from_parents([-1, 7])
    g = sylva.InputGraph.chain(3)
    with pytest.raises(sylva.Error, match=r"InputGraph.children: vertex 3 out of range \[0, 3\)"):
        g.children(3)
    with pytest.raises(sylva.Error, match=r"ids"):
        g.set_ids("words", [1, 2])


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(sylva.Error, match=r"nope.txt"):
        sylva.read_bracketed_trees(str(tmp_path / "nope.txt"))
    bad = tmp_path / "bad.txt"
    bad.write_text("(3 (2 good)\n")
    with pytest.raises(sylva.Error, match=r"bad.txt:1"):
        sylva.read_bracketed_trees(str(bad))
    with pytest.raises(sylva.Error, match=r"nope.safetensors"):
        sylva.load_checkpoint(sylva.ParameterSet(), str(tmp_path / "nope.safetensors"))


def test_shape_mismatches_name_the_op():
    ps = sylva.ParameterSet()
    ps.add("W", [3, 4])
    f = sylva.VertexFunction("f", 4)
    x = f.pull(5)
    with pytest.raises(sylva.Error, match=r"\[matmul\]"):
        sylva.matmul(x, f.param(ps["W"]))
    with pytest.raises(sylva.Error, match=r"split"):
        sylva.split(x, 2)
    with pytest.raises(sylva.Error, match=r"already pulls"):
        f.pull(3)
    other = sylva.VertexFunction("g", 4)
    with pytest.raises(sylva.Error, match=r"graph"):
        x + other.pull(5)


def test_unknown_names():
    ps = sylva.ParameterSet()
    ps.add("W", [2])
    with pytest.raises(sylva.Error, match=r"'V'.*W"):
        ps["V"]
    with pytest.raises(sylva.Error, match=r"exists|already"):
        ps.add("W", [2])
    with pytest.raises(sylva.Error, match=r"unknown dtype 'float16'"):
        sylva.ParameterSet("float16")
    with pytest.raises(sylva.Error, match=r"unknown batching policy 'dfs'"):
        sylva.ExecutorOptions(policy="dfs")
    with pytest.raises(sylva.Error):
        sylva.Device("tpu")


def test_missing_ids_name_the_sample():
    ps, _, p, _, _ = tiny_tree_model()
    g = sylva.InputGraph.chain(2, "no words")
    ex = sylva.Executor(p, ps)
    with pytest.raises(sylva.Error, match=r"no words"):
        ex.forward(sylva.GraphBatch([g]), "eval")


def test_a_nan_stops_the_trainer_before_any_parameter_changes():
    ps, _, p, _, loss = tiny_tree_model()
    ps["E"].value = np.full((6, 3), np.nan)
    before = {n: np.asarray(ps[n]).copy() for n in ps.names()}
    trainer = sylva.Trainer(p, ps, loss, sylva.Sgd(lr=0.1))
    with pytest.raises(sylva.Error, match=r"non-finite|NaN|nan"):
        trainer.step(sylva.GraphBatch(tiny_graphs()))
    for n in ps.names():
        np.testing.assert_array_equal(np.asarray(ps[n]), before[n])


def test_check_numerics_names_the_op_and_vertex():
    ps, _, p, _, loss = tiny_tree_model()
    ps["U"].value = np.full((8, 4), np.inf)
    trainer = sylva.Trainer(p, ps, loss, sylva.Sgd(), check_numerics=True)
    with pytest.raises(sylva.Error, match=r"vertex"):
        trainer.step(sylva.GraphBatch(tiny_graphs()))


def test_load_state_of_another_model(tmp_path):
    ps, _, p, _, loss = tiny_tree_model()
    trainer = sylva.Trainer(p, ps, loss, sylva.Adam())
    trainer.step(sylva.GraphBatch(tiny_graphs()))
    path = str(tmp_path / "s.safetensors")
    trainer.save_state(path)
    ps2, _, p2, _, loss2 = tiny_tree_model(hidden=5)
    with pytest.raises(sylva.Error, match=r"s.safetensors"):
        sylva.Trainer(p2, ps2, loss2, sylva.Adam()).load_state(path)
    with pytest.raises(sylva.Error, match=r"s.safetensors"):
        sylva.Trainer(p, ps, loss, sylva.Sgd(momentum=0.9)).load_state(path)
