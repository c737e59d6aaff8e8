"""Sylva: training dynamic neural networks fast, from Python.

Write the computation of one vertex once as a :class:`VertexFunction`; each
sample brings its own graph (:class:`InputGraph`); a :class:`Program` joins
the vertex functions with the static parts of the model, and an
:class:`Executor` or :class:`Trainer` batches every vertex of a minibatch by
breadth-first search. Tensors and parameters share memory with NumPy
(buffer protocol, DLPack). Errors are :class:`sylva.Error`.
"""

from ._sylva import *  # noqa: F401,F403
from ._sylva import Error, __doc__ as _native_doc  # noqa: F401

__version__ = "0.1.0"
