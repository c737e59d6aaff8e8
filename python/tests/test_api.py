"""The Python API end to end: parameters, symbols, vertex functions, programs, graphs, the executor,
the trainer, optimisers, checkpoints, the profiler and options given as keyword arguments."""

import os

import numpy as np
import pytest

import sylva
from conftest import tiny_graphs, tiny_tree_model


def test_parameter_set_adds_and_initialises():
    ps = sylva.ParameterSet("float32", 7)
    w = ps.add("W", [3, 4], sylva.Init.glorot())
    b = ps.add("b", [4], sylva.Init.constant(0.5), decay=False, lr_scale=0.1)
    assert len(ps) == 2 and "W" in ps and "x" not in ps
    assert ps.names() == ["W", "b"] and [p.name for p in ps] == ["W", "b"]
    assert w.shape == [3, 4] and w.dtype == "float32" and ps.numel() == 16
    bound = np.sqrt(6 / 7)
    values = np.asarray(w)
    assert np.all(np.abs(values) <= bound) and np.std(values) > 0
    assert np.all(np.asarray(b) == 0.5) and not b.decay and b.lr_scale == pytest.approx(0.1)
    assert ps["W"] is w


def test_same_seed_same_initial_values():
    a, b = sylva.ParameterSet("float64", 5), sylva.ParameterSet("float64", 5)
    for ps in (a, b):
        ps.add("E", [10, 3], sylva.Init.uniform(-1, 1))
    np.testing.assert_array_equal(np.asarray(a["E"]), np.asarray(b["E"]))


def test_symbols_carry_types_and_operators():
    ps = sylva.ParameterSet()
    ps.add("W", [3, 6])
    f = sylva.VertexFunction("f", 6)
    x = f.pull(3)
    assert x.rowed and x.cols == 3 and x.dtype == "float32"
    y = x @ f.param(ps["W"])
    assert y.cols == 6
    parts = sylva.split(y, 3)
    assert [p.cols for p in parts] == [2, 2, 2]
    z = sylva.concat([parts[0] * parts[1] - parts[2], 2.0 * parts[0], -parts[1] / 4.0])
    assert z.cols == 6 and sylva.slice(z, 1, 4).cols == 3
    for op in (sylva.tanh, sylva.sigmoid, sylva.relu, sylva.exp, sylva.softmax, sylva.log_softmax):
        assert op(y).cols == 6
    assert "Symbol" in repr(y)
    f.scatter(sylva.tanh(y))
    f.push(y)
    assert f.message_width == 6 and f.name == "f" and "digraph" in f.to_dot()


def test_executor_forward_backward_matches_finite_differences():
    ps, _, p, _, loss = tiny_tree_model()
    graphs = tiny_graphs()
    batch = sylva.GraphBatch(graphs)
    ex = sylva.Executor(p, ps, policy="bfs", seed=1)
    ex.forward(batch, "train")
    base = ex.scalar(loss)
    ps.zero_grad()
    ex.backward(loss)
    grad = np.asarray(ps["U"].grad).copy()
    u = np.asarray(ps["U"])
    eps = 1e-6
    for i, j in ((0, 0), (3, 2), (7, 1)):
        u[i, j] += eps
        ex.forward(batch, "eval")
        up = ex.scalar(loss)
        u[i, j] -= 2 * eps
        ex.forward(batch, "eval")
        down = ex.scalar(loss)
        u[i, j] += eps
        assert grad[i, j] == pytest.approx((up - down) / (2 * eps), rel=1e-5, abs=1e-9)
    assert np.isfinite(base) and base > 0


def test_bfs_and_serial_agree_in_float64():
    ps, _, p, logits, loss = tiny_tree_model()
    batch = sylva.GraphBatch(tiny_graphs())
    out = []
    for policy in ("bfs", "serial"):
        ex = sylva.Executor(p, ps, sylva.ExecutorOptions(policy=policy))
        ex.forward(batch, "eval")
        out.append((ex.scalar(loss), ex.value(logits).numpy().copy()))
    assert out[0][0] == pytest.approx(out[1][0], rel=1e-12)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-12)


def test_input_graph_and_batch():
    g = sylva.InputGraph.from_parents([2, 2, -1], "p")
    assert g.num_vertices == 3 and g.num_edges == 2 and g.children(2) == [0, 1] and g.roots() == [2]
    assert g.source == "p" and len(g) == 3 and g.max_arity == 2
    c = sylva.InputGraph.chain(4)
    assert c.children(3) == [2] and c.children(0) == []
    g.set_ids("words", np.array([4, 5, -1], dtype=np.int64))
    assert list(g.ids("words")) == [4, 5, -1] and g.has_ids("words") and g.id_names() == ["words"]
    c.set_ids("words", [0, 1, 2, 3])
    b = sylva.GraphBatch([g, c])
    assert b.num_samples == 2 and b.num_vertices == 7 and len(b) == 2
    assert list(b.sample_offsets()) == [0, 3, 7] and b.sample_of(4) == 1
    assert b.children(6) == [5] and list(b.ids("words")) == [4, 5, -1, 0, 1, 2, 3]
    assert "sample 1" in b.describe_vertex(4)


def test_readers_and_vocabulary(sst_dir):
    trees = sylva.read_bracketed_trees(str(sst_dir / "train.txt"))
    assert len(trees) == 15
    t = trees[0]
    assert t.tokens == ["It", "'s", "good", "", ""] and list(t.graph.ids("labels")) == [2, 2, 3, 4, 3]
    v = sylva.Vocabulary()
    v.set_unknown("<unk>")
    ids = v.add_all(t.tokens)
    assert list(ids) == [1, 2, 3, -1, -1] and len(v) == 4 and v.token(2) == "'s" and "It" in v
    assert list(v.ids(["good", "unseen", ""])) == [3, 0, -1] and v.unknown_id == 0
    one = sylva.parse_bracketed_tree("(1 (0 a) (2 b))")
    assert one.graph.num_vertices == 3
    (sst_dir / "seq.txt").write_text("a b c\nd e\n")
    chains = sylva.read_token_sequences(str(sst_dir / "seq.txt"))
    assert [c.graph.num_vertices for c in chains] == [3, 2] and chains[1].tokens == ["d", "e"]
    (sst_dir / "par.txt").write_text("-1 0 0\n1 -1\n")
    assert [g.num_vertices for g in sylva.read_parent_arrays(str(sst_dir / "par.txt"))] == [3, 2]


def test_rng_shuffles_reproducibly():
    a, b = sylva.Rng(9), sylva.Rng(9)
    pa = a.permutation(50)
    assert pa == b.permutation(50) and sorted(pa) == list(range(50)) and pa != list(range(50))
    state = a.state()
    nxt = a.permutation(10)
    a.set_state(state)
    assert a.permutation(10) == nxt


@pytest.mark.parametrize("opt", [sylva.Sgd(lr=0.1, momentum=0.5), sylva.Adagrad(lr=0.1), sylva.Adam(lr=0.01)])
def test_trainer_lowers_the_loss(opt):
    ps, _, p, _, loss = tiny_tree_model()
    batch = sylva.GraphBatch(tiny_graphs())
    trainer = sylva.Trainer(p, ps, loss, opt, clip_norm=5.0, weight_decay=1e-4, policy="bfs", seed=2)
    first = trainer.step(batch)
    for _ in range(30):
        last = trainer.step(batch)
    assert first.samples == 3 and first.vertices == 9 and first.grad_norm > 0
    assert last.loss < first.loss and trainer.steps == 31
    assert trainer.optimizer.name == opt.name and trainer.optimizer.steps == 31 and opt.steps == 0
    assert trainer.evaluate(batch) == pytest.approx(trainer.executor.scalar(loss))


def test_precision_keyword():
    assert sylva.ExecutorOptions().precision == "fp32"
    assert sylva.ExecutorOptions(precision="bf16").precision == "bf16"
    with pytest.raises(sylva.Error, match="fp32 or bf16"):
        sylva.ExecutorOptions(precision="fp16")
    ps, _, p, _, loss = tiny_tree_model()  # float64: bf16 is for float32 programs
    with pytest.raises(sylva.Error, match="float64"):
        sylva.Executor(p, ps, precision="bf16")
    ps, _, p, _, loss = tiny_tree_model("float32")
    batch = sylva.GraphBatch(tiny_graphs())
    fp32 = sylva.Trainer(p, ps, loss, sylva.Sgd(lr=0.1)).evaluate(batch)
    try:
        trainer = sylva.Trainer(p, ps, loss, sylva.Sgd(lr=0.1), precision="bf16")
    except sylva.Error as e:  # a CPU without AVX512_BF16 says so
        assert "AVX512_BF16" in str(e)
        return
    assert trainer.executor.options.precision == "bf16"
    bf16 = trainer.evaluate(batch)
    assert bf16 != fp32 and bf16 == pytest.approx(fp32, rel=2e-2)
    first = trainer.step(batch)
    for _ in range(20):
        last = trainer.step(batch)
    assert last.loss < first.loss


def test_optimizer_step_and_gradient_utilities():
    ps = sylva.ParameterSet("float64")
    w = ps.add("w", [2], sylva.Init.constant(1.0))
    w.grad = np.array([3.0, 4.0])
    assert sylva.global_grad_norm(ps) == pytest.approx(5.0)
    assert sylva.clip_grad_norm(ps, 1.0) == pytest.approx(5.0)
    np.testing.assert_allclose(np.asarray(w.grad), [0.6, 0.8])
    sgd = sylva.Sgd(lr=0.5)
    sgd.step(ps)
    np.testing.assert_allclose(np.asarray(w), [0.7, 0.6])
    sgd.learning_rate = 0.25
    assert sgd.learning_rate == 0.25 and sgd.steps == 1
    sylva.add_weight_decay(ps, 0.5)
    np.testing.assert_allclose(np.asarray(w.grad), [0.95, 1.1])


def test_checkpoint_and_trainer_state_round_trip(tmp_path):
    ps, _, p, _, loss = tiny_tree_model()
    batch = sylva.GraphBatch(tiny_graphs())
    trainer = sylva.Trainer(p, ps, loss, sylva.Adam(lr=0.01))
    trainer.step(batch)
    sylva.save_checkpoint(ps, str(tmp_path / "c.safetensors"), {"epoch": "1"})
    trainer.save_state(str(tmp_path / "s.safetensors"), {"epoch": "1"})
    after_one = {n: np.asarray(ps[n]).copy() for n in ps.names()}
    reference = trainer.step(batch).loss

    ps2, _, p2, _, loss2 = tiny_tree_model(seed=99)
    assert sylva.load_checkpoint(ps2, str(tmp_path / "c.safetensors"))["epoch"] == "1"
    for n in ps.names():
        np.testing.assert_array_equal(np.asarray(ps2[n]), after_one[n])
    resumed = sylva.Trainer(p2, ps2, loss2, sylva.Adam(lr=0.01))
    assert resumed.load_state(str(tmp_path / "s.safetensors"))["epoch"] == "1" and resumed.steps == 1
    assert resumed.step(batch).loss == reference


def test_profiler_sees_the_ops():
    ps, _, p, _, loss = tiny_tree_model()
    trainer = sylva.Trainer(p, ps, loss, sylva.Sgd(lr=0.1))
    prof = sylva.Profiler()
    trainer.executor.set_profiler(prof)
    trainer.step(sylva.GraphBatch(tiny_graphs()))
    trainer.executor.set_profiler(None)
    prof.add_wall_time(1.0)
    assert prof.op_seconds() > 0 and "matmul" in prof.report()


def test_options_as_keyword_arguments():
    o = sylva.ExecutorOptions(policy="serial", seed=4, fusion=False, ios=False, threads=1)
    assert (o.policy, o.seed, o.fusion, o.ios, o.threads) == ("serial", 4, False, False, 1)
    o.ios_options.variant = "ios-merge"
    assert o.ios_options.variant == "ios-merge" and str(o.device) == "cpu"
    o.device = "cpu"
    assert sylva.ExecutorOptions(direct_row_selection=False).direct_row_selection is False
    assert sylva.ExecutorOptions(pull_from_table=False).pull_from_table is False
    assert sylva.ExecutorOptions(children_in_place=False).children_in_place is False
    assert sylva.ExecutorOptions(lend_forward_arenas=False).lend_forward_arenas is False
    t = sylva.TrainerOptions()
    t.normalisation = "none"
    assert t.normalisation == "none" and t.parallel.overlap
    ps, _, p, _, loss = tiny_tree_model()
    trainer = sylva.Trainer(p, ps, loss, sylva.Sgd(), t, clip_norm=1.0, streaming=False, memory_budget_bytes=1 << 30)
    assert trainer.executor.options.streaming is False and trainer.executor.options.memory_budget_bytes == 1 << 30
    with pytest.raises(TypeError, match="unexpected keyword argument 'sead'.*seed"):
        sylva.Executor(p, ps, sead=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        sylva.Trainer(p, ps, loss, sylva.Sgd(), bogus=1)


def test_optimisations_come_from_one_table():
    rows = sylva.optimisations()
    names = [r["name"] for r in rows]
    assert "fusion" in names and "trim_fused_zeros" in names and len(set(names)) == len(names)
    default, reference = sylva.ExecutorOptions(), sylva.ExecutorOptions.reference()
    for r in rows:  # every row is a keyword, on by default, off in the reference
        assert getattr(default, r["name"]) is True and getattr(reference, r["name"]) is False
        assert r["flag"].startswith("--no-")
    trim = next(r for r in rows if r["name"] == "trim_fused_zeros")
    assert set(trim["needs"]) == {"fusion", "skip_zero_work"}
    # False takes what needs it off too; True on its own leaves a conflict validate() names.
    o = sylva.ExecutorOptions(fusion=False)
    assert o.trim_fused_zeros is False and o.skip_zero_work is True
    o.validate()
    o.trim_fused_zeros = True
    with pytest.raises(sylva.Error, match="trim_fused_zeros is on but needs fusion"):
        o.validate()
    ps, _, p, _, _ = tiny_tree_model()
    with pytest.raises(sylva.Error, match="trim_fused_zeros is on but needs fusion"):
        sylva.Executor(p, ps, o)
    assert "fusion: off" in reference.to_text()


def test_task_local_values_hold_less_and_change_nothing():
    held, losses = [], []
    for task_local in (True, False):
        ps, _, p, _, loss = tiny_tree_model()
        o = sylva.ExecutorOptions(task_local_values=task_local, row_windows=False)
        assert o.task_local_values is task_local and o.row_windows is False
        ex = sylva.Executor(p, ps, o)
        ex.forward(sylva.GraphBatch(tiny_graphs()), "train")
        losses.append(ex.scalar(loss))
        held.append(ex.held_bytes())
    assert losses[0] == losses[1] and 0 < held[0] < held[1]


def test_trim_fused_zeros_is_an_option_that_changes_no_loss():
    losses = []
    for trim in (True, False):
        ps, _, p, _, loss = tiny_tree_model()
        ex = sylva.Executor(p, ps, trim_fused_zeros=trim)
        assert ex.options.trim_fused_zeros is trim
        ex.forward(sylva.GraphBatch(tiny_graphs()), "train")
        losses.append(ex.scalar(loss))
    assert losses[0] == losses[1]


def test_devices():
    assert str(sylva.Device("cpu")) == "cpu" and sylva.Device("cuda:1").index == 1
    assert sylva.Device("cuda").kind == "cuda" and sylva.usable_cpu_cores() >= 1


def test_the_gil_is_released_during_steps():
    import threading
    import time

    ps, _, p, _, loss = tiny_tree_model(hidden=256)
    trainer = sylva.Trainer(p, ps, loss, sylva.Sgd(lr=0.01))
    batch = sylva.GraphBatch(tiny_graphs() * 300)
    trainer.step(batch)  # plans and buffers
    ticks, done = [], threading.Event()

    def count():
        while not done.is_set():
            ticks.append(1)
            time.sleep(0.0002)

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.01)
    before, start = len(ticks), time.perf_counter()
    trainer.step(batch)
    during, seconds = len(ticks) - before, time.perf_counter() - start
    done.set()
    t.join()
    # With the GIL held for the whole step the other thread could not run during it (at most one tick
    # as the call returns); released, it ticks every ~0.2 ms.
    assert seconds > 0.01, f"the step took {seconds:.4f} s: too short to tell"
    assert during >= 5, f"{during} ticks in a {seconds:.3f} s step"


@pytest.mark.skipif(os.environ.get("SYLVA_STUBS") != "1",
                    reason="this build makes no stubs (sanitizer builds; ctest sets SYLVA_STUBS=1 where it does)")
def test_type_stubs_ship_beside_the_module():
    stub = os.path.join(os.path.dirname(sylva._sylva.__file__), "_sylva.pyi")
    text = open(stub, encoding="utf-8").read()
    assert os.path.exists(os.path.join(os.path.dirname(stub), "py.typed"))
    for line in ("class Trainer:", "def step(self, batch: GraphBatch) -> StepResult:", "class Error(RuntimeError):",
                 "def from_dlpack("):
        assert line in text, line


def test_the_batch_plan_of_the_last_minibatch_prints():
    ps = sylva.ParameterSet("float64", 1)
    ps.add("W", [6, 3], sylva.Init.glorot())
    f = sylva.VertexFunction("cell", 3, "float64")
    h = sylva.tanh(sylva.concat([f.gather(0), f.gather(1)]) @ f.param(ps["W"]))
    f.scatter(h)
    f.push(h)
    p = sylva.Program("float64")
    apply = p.apply(f)
    ex = sylva.Executor(p, ps)
    with pytest.raises(sylva.Error, match="no batch plan yet"):
        ex.batch_plan(apply)
    ex.forward(sylva.GraphBatch([sylva.InputGraph.from_children([[], [], [0, 1]], "t")]), "eval")
    text = ex.batch_plan(apply)
    assert text.startswith("batch plan: 3 rows in 2 tasks") and "task 0: rows [0, 2); absent: slot 0, slot 1" in text
    assert "children block: F's concat" in ex.vertex_plan(apply)
