"""The hot elementwise and row-reduction pieces of the neural-network path, written once.

Every kernel here is a plain array function of a namespace ``xp`` (:mod:`numpy` or :mod:`cupy`).
NumPy runs the function body as it is: that body *is* the reference. On CuPy arrays the same body
is handed to :func:`cupy.fuse`, which compiles it into one elementwise CUDA kernel instead of one
kernel launch (and one temporary array) per operation. The one piece fusion cannot express, a
per-row softmax with its max-shift and the gradient written back into the row, is a
:class:`cupy.RawKernel` whose CUDA source is the package file ``fedtheory/problems/nn/cuda/softmax_xent.cu``.

CuPy is imported lazily, only when a kernel receives a CuPy array, so NumPy-only installations
never need it.

Kernels
-------
bias_act(z, b, activation)
    a = act(z + b): the affine layer's bias and the nonlinearity, fused.
act_backward(da, a, activation)
    dz = da * act'(z) expressed through the stored output a (ReLU: a > 0; tanh: 1 - a^2).
softmax_xent(logits, labels, weights)
    per-row cross-entropy and the weighted gradient w * (softmax - onehot).

The server's optimizer step is :class:`fedtheory.algorithms.server_opt.ServerOptimizer`'s, the
one server optimizer of every algorithm: a few elementwise operations on (S, d) arrays per
round, where fusion saves nothing that matters.

References
----------
.. [1] CuPy documentation, "Kernel fusion" (``cupy.fuse``) and "User-defined kernels"
   (``cupy.RawKernel``).
"""

from __future__ import annotations

import functools
from importlib import resources
from types import ModuleType
from typing import Any

import numpy as np

from fedtheory.backend import get_namespace
from fedtheory.errors import AssumptionError

__all__ = [
    "ACTIVATIONS",
    "CUDA_SOURCES",
    "act_backward",
    "act_backward_reference",
    "bias_act",
    "bias_act_reference",
    "cuda_source",
    "softmax_xent",
    "softmax_xent_reference",
]

ACTIVATIONS = ("relu", "tanh")
CUDA_SOURCES = ("softmax_xent.cu",)


def _check_activation(activation: str) -> str:
    if activation not in ACTIVATIONS:
        raise AssumptionError(
            f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}"
        )
    return activation


def _is_cupy(xp: ModuleType) -> bool:
    return xp.__name__ == "cupy"


# --------------------------------------------------------------------------------------------
# Bodies: one definition per kernel, parameterized by the namespace. Python-level branches only
# look at static configuration (the activation's name), never at array values, so the same
# body can be traced by cupy.fuse.
# --------------------------------------------------------------------------------------------


def _bias_act_body(xp: ModuleType, activation: str):
    if activation == "relu":

        def body(z, b):
            return xp.maximum(z + b, 0)

    else:

        def body(z, b):
            return xp.tanh(z + b)

    return body


def _act_backward_body(xp: ModuleType, activation: str):
    if activation == "relu":

        def body(da, a):
            return da * (a > 0)

    else:

        def body(da, a):
            return da * (1 - a * a)

    return body


# --------------------------------------------------------------------------------------------
# CuPy builders (lazy, cached): fused versions of the bodies above and the RawKernels.
# --------------------------------------------------------------------------------------------


@functools.cache
def _fused(kind: str, *config: Any):
    import cupy  # noqa: PLC0415  (optional extra fedtheory[gpu])

    makers = {"bias_act": _bias_act_body, "act_backward": _act_backward_body}
    body = makers[kind](cupy, *config)
    name = "fedtheory_" + "_".join([kind, *(str(c) for c in config)])
    return cupy.fuse(kernel_name=name)(body)


def cuda_source(name: str) -> str:
    """The text of a CUDA source shipped in ``fedtheory/problems/nn/cuda/`` (e.g. ``"softmax_xent.cu"``)."""
    if name not in CUDA_SOURCES:
        raise AssumptionError(f"unknown CUDA source {name!r}: choose one of {CUDA_SOURCES}")
    return (
        resources.files("fedtheory.problems.nn").joinpath("cuda", name).read_text(encoding="utf-8")
    )


@functools.cache
def _raw_kernel(name: str):
    import cupy  # noqa: PLC0415  (optional extra fedtheory[gpu])

    return cupy.RawKernel(cuda_source("softmax_xent.cu"), name)


# --------------------------------------------------------------------------------------------
# Public kernels.
# --------------------------------------------------------------------------------------------


def bias_act(z: Any, b: Any, activation: str = "relu") -> Any:
    """``act(z + b)``: bias addition and nonlinearity in one pass.

    Parameters
    ----------
    z : array (..., B, h)
        Pre-activations without bias (the output of a batched matmul).
    b : array (..., 1, h) or broadcastable
        Bias.
    activation : {"relu", "tanh"}

    Returns
    -------
    array
        ``max(z + b, 0)`` or ``tanh(z + b)`` with the broadcast shape of ``z`` and ``b``.
    """
    _check_activation(activation)
    xp = get_namespace(z, b)
    if _is_cupy(xp):
        return _fused("bias_act", activation)(z, b)
    # NumPy: the body's two ufuncs in place on one fresh buffer (a second temporary of this size
    # costs more in page faults than the arithmetic); equal bit for bit to the body.
    a = z + b
    if activation == "relu":
        return np.maximum(a, 0, out=a)
    return np.tanh(a, out=a)


def bias_act_reference(z: Any, b: Any, activation: str = "relu") -> np.ndarray:
    """The NumPy reference of :func:`bias_act` (the same body run by NumPy)."""
    _check_activation(activation)
    return _bias_act_body(np, activation)(np.asarray(z), np.asarray(b))


def act_backward(da: Any, a: Any, activation: str = "relu", *, overwrite: bool = False) -> Any:
    """Gradient through the activation, from the stored output ``a = act(z)``.

    ReLU: ``dz = da * 1{a > 0}`` (the subgradient 0 is used at z = 0); tanh:
    ``dz = da * (1 - a^2)`` since tanh' = 1 - tanh^2. ``overwrite=True`` lets the NumPy path
    write the result into ``da`` (a temporary of the caller's).
    """
    _check_activation(activation)
    xp = get_namespace(da, a)
    if _is_cupy(xp):
        return _fused("act_backward", activation)(da, a)
    if da.shape != a.shape:
        return _act_backward_body(xp, activation)(da, a)
    # NumPy: the body's ufuncs with one output buffer (``da`` itself with overwrite=True);
    # equal bit for bit to the body.
    if activation == "relu":
        return np.multiply(da, a > 0, out=da if overwrite else None)
    t = a * a
    np.subtract(1, t, out=t)
    return np.multiply(da, t, out=da if overwrite else t)


def act_backward_reference(da: Any, a: Any, activation: str = "relu") -> np.ndarray:
    """The NumPy reference of :func:`act_backward`."""
    _check_activation(activation)
    return _act_backward_body(np, activation)(np.asarray(da), np.asarray(a))


def softmax_xent_reference(logits: Any, labels: Any, weights: Any) -> tuple[Any, Any]:
    """Softmax cross-entropy per row and its weighted gradient, in array operations.

    Parameters
    ----------
    logits : array (..., C)
    labels : int array broadcastable to ``logits.shape[:-1]``, entries in ``[0, C)``
    weights : float array broadcastable to ``logits.shape[:-1]``

    Returns
    -------
    loss : array (...)
        ``logsumexp(z) - z[y]`` per row, unweighted.
    grad : array (..., C)
        ``w * (softmax(z) - onehot(y))``, the gradient of ``sum_rows w * loss``.

    Notes
    -----
    The max-shift ``z - max(z)`` keeps ``exp`` from overflowing; it is the computation the CUDA
    kernel ``softmax_xent.cu`` performs row by row.
    """
    xp = get_namespace(logits)
    lead = logits.shape[:-1]
    labels = xp.broadcast_to(xp.asarray(labels), lead)
    weights = xp.broadcast_to(xp.asarray(weights, dtype=logits.dtype), lead)
    m = xp.max(logits, axis=-1, keepdims=True)
    e = xp.exp(logits - m)
    s = xp.sum(e, axis=-1, keepdims=True)
    z_y = xp.take_along_axis(logits, labels[..., None], axis=-1)
    loss = (m + xp.log(s) - z_y)[..., 0]
    grad = (weights[..., None] / s) * e
    onehot = xp.arange(logits.shape[-1]) == labels[..., None]
    grad = grad - weights[..., None] * onehot
    return loss, grad


def softmax_xent(logits: Any, labels: Any, weights: Any) -> tuple[Any, Any]:
    """Softmax cross-entropy and gradient: :func:`softmax_xent_reference` on NumPy, the
    ``softmax_xent.cu`` RawKernel (one thread per row) on CuPy. Same contract."""
    xp = get_namespace(logits)
    if not _is_cupy(xp):
        return softmax_xent_reference(logits, labels, weights)
    lead = logits.shape[:-1]
    classes = logits.shape[-1]
    rows = int(np.prod(lead, dtype=np.int64))
    z = xp.ascontiguousarray(logits)
    y = xp.ascontiguousarray(xp.broadcast_to(xp.asarray(labels, dtype=xp.int64), lead))
    w = xp.ascontiguousarray(xp.broadcast_to(xp.asarray(weights, dtype=z.dtype), lead))
    loss = xp.empty(lead, dtype=z.dtype)
    grad = xp.empty_like(z)
    name = "softmax_xent_f64" if z.dtype == np.float64 else "softmax_xent_f32"
    threads = 128
    blocks = max(1, (rows + threads - 1) // threads)
    _raw_kernel(name)(
        (blocks,), (threads,), (z, y, w, loss, grad, np.int64(rows), np.int32(classes))
    )
    return loss, grad
