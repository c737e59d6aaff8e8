"""Data-parallel training from Python: a Trainer over a communicator computes what one process computes
(the self engine here, two Open MPI ranks under mpirun where the build has MPI)."""

import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import sylva
from conftest import tiny_graphs, tiny_tree_model


def train(communicator=None, steps=4, **kw):
    ps, _, p, _, loss = tiny_tree_model()
    trainer = sylva.Trainer(p, ps, loss, sylva.Adam(lr=0.01), communicator=communicator, **kw)
    batch = sylva.GraphBatch(tiny_graphs() * 3)
    results = [trainer.step(batch) for _ in range(steps)]
    return ps, results


def test_a_trainer_over_the_self_communicator_matches_one_process():
    comm = sylva.self_communicator(deadline_s=5.0)
    assert (comm.rank, comm.size, comm.engine) == (0, 1, "self")
    alone, r1 = train()
    together, r2 = train(comm)
    assert [r.loss for r in r1] == pytest.approx([r.loss for r in r2], rel=1e-12)
    assert r2[-1].local_samples == 9
    for name in alone.names():
        np.testing.assert_allclose(np.asarray(together[name]), np.asarray(alone[name]), rtol=1e-12, atol=1e-15)


def test_collectives_on_numpy_arrays():
    comm = sylva.self_communicator()
    a = np.arange(5, dtype=np.float64)
    comm.allreduce_sum(a, "a")
    np.testing.assert_array_equal(a, np.arange(5))
    comm.barrier("b")
    with pytest.raises(sylva.Error, match=r"float32, float64 or int64"):
        comm.allreduce_sum(np.zeros(3, dtype=np.int32), "ints")
    with pytest.raises(TypeError):
        comm.allreduce_sum(np.zeros((4, 4))[:, ::2], "strided")  # in place needs contiguous memory


def test_device_sums_is_one_of_three_engines():
    o = sylva.DataParallelOptions()
    assert o.device_sums == "automatic"
    for v in ("nccl", "host", "automatic"):
        o.device_sums = v
        assert o.device_sums == v
    with pytest.raises(sylva.Error, match=r"device_sums 'gpu' \(automatic, nccl or host\)"):
        o.device_sums = "gpu"


def test_the_trainer_keeps_its_communicator_alive():
    ps, _, p, _, loss = tiny_tree_model()
    trainer = sylva.Trainer(p, ps, loss, sylva.Sgd(), communicator=sylva.self_communicator())
    assert trainer.step(sylva.GraphBatch(tiny_graphs())).samples == 3


RANK_SCRIPT = """
import sys
import numpy as np
import sylva
sys.path.insert(0, {tests!r})
from conftest import tiny_graphs, tiny_tree_model

comm = sylva.mpi_communicator(deadline_s=30.0)
x = np.array([comm.rank + 1.0])
comm.allreduce_sum(x, "ranks")
assert x[0] == comm.size * (comm.size + 1) / 2, x
ps, _, p, _, loss = tiny_tree_model()
trainer = sylva.Trainer(p, ps, loss, sylva.Adam(lr=0.01), communicator=comm)
batch = sylva.GraphBatch(tiny_graphs() * 3)
for _ in range(4):
    r = trainer.step(batch)
print(f"rank {{comm.rank}} of {{comm.size}}: {{r.local_samples}} of {{r.samples}} samples", flush=True)
if comm.rank == 0:
    sylva.save_checkpoint(ps, {out!r})
"""


@pytest.mark.skipif(not sylva.mpi_available(), reason="this build has no MPI engine (SYLVA_WITH_MPI)")
@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun on PATH")
def test_two_mpi_ranks_train_as_one_process(tmp_path):
    out = str(tmp_path / "dp.safetensors")
    script = tmp_path / "rank.py"
    script.write_text(textwrap.dedent(RANK_SCRIPT.format(tests=os.path.dirname(__file__), out=out)))
    env = dict(os.environ)
    preload = env.pop("LD_PRELOAD", None)  # sanitizer runtimes: for the ranks, not for mpirun itself
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader,tcp",
           "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo", "-np", "2"]
    if preload:
        cmd += ["-x", f"LD_PRELOAD={preload}"]
    r = subprocess.run(cmd + [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=240)
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    shares = [int(x) for x in re.findall(r"rank \d of 2: (\d+) of 9 samples", r.stdout)]
    assert len(shares) == 2 and sum(shares) == 9 and min(shares) > 0, r.stdout  # each rank ran its share
    alone, _ = train()
    ps, _, _, _, _ = tiny_tree_model(seed=123)
    sylva.load_checkpoint(ps, out)
    for name in alone.names():  # default mode: the sums' order is MPI's, so equal to rounding
        np.testing.assert_allclose(np.asarray(ps[name]), np.asarray(alone[name]), rtol=1e-9, atol=1e-12)
