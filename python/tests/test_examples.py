"""python/examples/tree_lstm.py and var_lstm.py against the C++ examples examples/02_tree_lstm and
03_var_lstm on the same data and seed: the same losses, accuracies and final parameters. The C++
binaries come from $SYLVA_TREE_LSTM and $SYLVA_VAR_LSTM (set by ctest); without them these tests skip
and say so."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import source_dir

CPP = os.environ.get("SYLVA_TREE_LSTM")
needs_cpp = pytest.mark.skipif(not CPP or not os.path.exists(CPP),
                               reason="SYLVA_TREE_LSTM (the C++ tree_lstm example) is not set; ctest sets it")
CPP_LM = os.environ.get("SYLVA_VAR_LSTM")
needs_cpp_lm = pytest.mark.skipif(not CPP_LM or not os.path.exists(CPP_LM),
                                  reason="SYLVA_VAR_LSTM (the C++ var_lstm example) is not set; ctest sets it")


def read_safetensors(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = {"F32": np.float32, "F64": np.float64}[info["dtype"]]
        out[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(info["shape"])
    return out


def numbers(log):
    """The losses of every progress line and the accuracies of every epoch and of the end."""
    losses = [float(x) for x in re.findall(r"loss/tree (\S+)", log)]
    accuracies = re.findall(r"dev root fine (\S+)% binary (\S+)%", log)
    final = re.findall(r"test root fine-grained (\S+)% \((\d+)/(\d+)\), binary (\S+)% \((\d+)/(\d+)\)", log)
    return losses, accuracies, final


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, f"{cmd[0]} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r.stdout


CASES = {
    "tai-float64-adagrad": ["--float64", "--optimizer", "adagrad", "--lr", "0.05"],
    "dynet-float32-adam": ["--cell", "dynet", "--optimizer", "adam", "--lr", "0.01", "--clip", "1", "--emb-dropout",
                           "0.2"],
}


def test_python_example_reports_an_empty_split():
    example = os.path.join(source_dir(), "python", "examples", "tree_lstm.py")
    fixture = os.path.join(source_dir(), "tests", "examples", "fixtures", "sst_empty_train")
    r = subprocess.run([sys.executable, example, "--data", fixture], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "train.txt holds no trees: nothing to train on" in r.stderr, r.stderr


def test_python_var_lstm_reports_an_empty_split(tmp_path):
    for name, text in (("ptb.train.txt", ""), ("ptb.valid.txt", "a b\n"), ("ptb.test.txt", "b a\n")):
        (tmp_path / name).write_text(text)
    example = os.path.join(source_dir(), "python", "examples", "var_lstm.py")
    r = subprocess.run([sys.executable, example, "--data", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "ptb.train.txt holds no sentences" in r.stderr, r.stderr


@needs_cpp
@pytest.mark.parametrize("case", sorted(CASES))
def test_python_example_equals_the_cpp_example(case, sst_dir, tmp_path):
    common = ["--data", str(sst_dir), "--dim", "8", "--hidden", "6", "--batch", "4", "--epochs", "3", "--seed", "5",
              "--threads", "1", "--progress-seconds", "0"] + CASES[case]
    cpp = run([CPP, *common, "--checkpoint", str(tmp_path / "cpp.safetensors")])
    example = os.path.join(source_dir(), "python", "examples", "tree_lstm.py")
    py = run([sys.executable, example, *common, "--checkpoint", str(tmp_path / "py.safetensors")], env=dict(os.environ))
    c, p = numbers(cpp), numbers(py)
    assert len(c[0]) == 12 and len(c[1]) == 3 and len(c[2]) == 1, cpp
    assert c == p, f"C++:\n{cpp}\nPython:\n{py}"
    assert_same_checkpoints(tmp_path / "cpp.safetensors", tmp_path / "py.safetensors")


def test_python_example_reports_missing_data(tmp_path):
    example = os.path.join(source_dir(), "python", "examples", "tree_lstm.py")
    env = dict(os.environ, SYLVA_DATA=str(tmp_path))
    r = subprocess.run([sys.executable, example, "--data", str(tmp_path / "none")], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 1 and "SST not found; looked in:" in r.stderr and str(tmp_path / "none") in r.stderr


def test_the_readme_python_program_is_the_quickstart_and_runs():
    root = source_dir()
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    block = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    quickstart = os.path.join(root, "python", "examples", "quickstart.py")
    assert block == open(quickstart, encoding="utf-8").read()
    assert len(block.strip().splitlines()) <= 22
    out = run([sys.executable, quickstart], env=dict(os.environ))
    losses = [float(x) for x in re.findall(r"loss (\S+)", out)]
    assert len(losses) == 5 and losses[-1] < losses[0]


PTB = {
    "train": ["the cat sat on the mat", "a dog sat", "the dog ate the cat food", "on the mat a cat",
              "dogs and cats", "the end"],
    "valid": ["the cat ate", "a bird sat on the mat"],
    "test": ["the dog sat on a mat", "cats"],
}


def assert_same_checkpoints(a_path, b_path):
    a, b = read_safetensors(a_path), read_safetensors(b_path)
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@needs_cpp_lm
@pytest.mark.parametrize("dtype", [["--float64"], []], ids=["float64", "float32"])
def test_python_var_lstm_equals_the_cpp_example(dtype, tmp_path):
    for split, lines in PTB.items():
        (tmp_path / f"ptb.{split}.txt").write_text("\n".join(lines) + "\n")
    common = ["--data", str(tmp_path), "--embed", "8", "--hidden", "6", "--batch", "4", "--epochs", "3",
              "--dropout", "0.3", "--lr", "0.5", "--decay-after", "1", "--seed", "4", "--threads", "1",
              "--progress-seconds", "0", *dtype]
    cpp = run([CPP_LM, *common, "--checkpoint", str(tmp_path / "cpp.safetensors")])
    example = os.path.join(source_dir(), "python", "examples", "var_lstm.py")
    py = run([sys.executable, example, *common, "--checkpoint", str(tmp_path / "py.safetensors")],
             env=dict(os.environ))
    pattern = r"train ppl (\S+) \| \|g\| (\S+)|valid ppl (\S+)|test perplexity (\S+)"
    c, p = re.findall(pattern, cpp), re.findall(pattern, py)
    assert len(c) == 3 * 2 + 3 + 1, cpp
    assert c == p, f"C++:\n{cpp}\nPython:\n{py}"
    assert_same_checkpoints(tmp_path / "cpp.safetensors", tmp_path / "py.safetensors")
