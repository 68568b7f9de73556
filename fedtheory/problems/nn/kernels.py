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
server_update(x, m, v, v_hat, delta, ...)
    one step of the adaptive server optimizers FedAdam / FedYogi / FedAdagrad / FedAMSGrad
    (Reddi et al. 2021; Wang et al. 2022b; 000 eq. (2) and Algorithm 1 lines 20-22).

References
----------
.. [1] CuPy documentation, "Kernel fusion" (``cupy.fuse``) and "User-defined kernels"
   (``cupy.RawKernel``).
.. [2] S. Reddi et al., "Adaptive Federated Optimization", ICLR 2021, Algorithm 2.
.. [3] Y. Wang, L. Lin, J. Chen, "Communication-efficient adaptive federated learning",
   ICML 2022 (FedAMS / FedAMSGrad).
"""

from __future__ import annotations

import functools
from importlib import resources
from types import ModuleType
from typing import Any

import numpy as np

from fedtheory.backend import get_namespace, to_numpy
from fedtheory.errors import AssumptionError

__all__ = [
    "ACTIVATIONS",
    "CUDA_SOURCES",
    "SERVER_RULES",
    "act_backward",
    "act_backward_reference",
    "bias_act",
    "bias_act_reference",
    "cuda_source",
    "server_update",
    "server_update_reference",
    "softmax_xent",
    "softmax_xent_reference",
]

ACTIVATIONS = ("relu", "tanh")
SERVER_RULES = ("sgd", "adam", "yogi", "adagrad", "amsgrad")
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
# look at static configuration (activation name, rule name), never at array values, so the same
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


def _server_body(xp: ModuleType, rule: str, eps_inside_sqrt: bool):
    """x, m, v, v_hat, delta, lr, beta1, beta2, eps -> (x', m', v', v_hat').

    Delta is the aggregated client update (x_i - x averaged over the participants), so the server
    *adds* lr times the preconditioned momentum (docs/algorithms.md Section 4; 000 Algorithm 1). The
    operations and their order are those of
    :meth:`fedtheory.algorithms.server_opt.ServerOptimizer.update` followed by ``x + step``, so
    both give the same bits (tests/test_nn_kernels.py).
    """

    def denom(vh, eps):
        return xp.sqrt(vh + eps) if eps_inside_sqrt else xp.sqrt(vh) + eps

    if rule == "sgd":  # never fused (a Python branch on beta1); FedAvg / FedAvgM server step

        def body(x, m, v, v_hat, delta, lr, beta1, beta2, eps):
            m1 = delta if beta1 == 0.0 else beta1 * m + (1.0 - beta1) * delta
            return x + lr * m1, m1, v, v_hat

        return body

    if rule == "yogi":

        def v_new(v, d2, beta2):
            return v - (1.0 - beta2) * d2 * xp.sign(v - d2)

    elif rule == "adagrad":

        def v_new(v, d2, beta2):
            return v + d2

    else:  # adam, amsgrad

        def v_new(v, d2, beta2):
            return beta2 * v + (1.0 - beta2) * d2

    amsgrad = rule == "amsgrad"

    def body(x, m, v, v_hat, delta, lr, beta1, beta2, eps):
        m1 = beta1 * m + (1.0 - beta1) * delta
        v1 = v_new(v, delta * delta, beta2)
        vh1 = xp.maximum(v_hat, v1) if amsgrad else v1
        return x + lr * m1 / denom(vh1, eps), m1, v1, vh1

    return body


# --------------------------------------------------------------------------------------------
# CuPy builders (lazy, cached): fused versions of the bodies above and the RawKernels.
# --------------------------------------------------------------------------------------------


@functools.cache
def _fused(kind: str, *config: Any):
    import cupy  # noqa: PLC0415  (optional extra fedtheory[gpu])

    makers = {"bias_act": _bias_act_body, "act_backward": _act_backward_body}
    maker = makers.get(kind, _server_body)
    body = maker(cupy, *config)
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


def server_update(
    x: Any,
    m: Any,
    v: Any,
    v_hat: Any,
    delta: Any,
    *,
    rule: str = "amsgrad",
    lr: float = 0.01,
    beta1: float = 0.9,
    beta2: float = 0.99,
    eps: float = 1e-8,
    eps_placement: str | None = None,
) -> tuple[Any, Any, Any, Any]:
    """One elementwise step of a server optimizer, fused into one kernel on CuPy.

    With ``Delta`` the aggregated client update (mean over participants of x_i - x):
    ``m <- beta1 m + (1 - beta1) Delta`` and then

    - ``"adam"``:    ``v <- beta2 v + (1 - beta2) Delta^2``
    - ``"yogi"``:    ``v <- v - (1 - beta2) Delta^2 sign(v - Delta^2)``
    - ``"adagrad"``: ``v <- v + Delta^2``
    - ``"amsgrad"``: ``v`` as Adam and ``v_hat <- max(v_hat, v)``; the others set ``v_hat = v``
    - ``"sgd"``:     ``x <- x + lr m`` with ``m = Delta`` when ``beta1 = 0`` (FedAvg's server
      step; server momentum otherwise); v, v_hat unchanged

    and ``x <- x + lr m / sqrt(v_hat + eps)`` (``eps_placement="inside"``, 000 Algorithm 1 line
    22, the default for amsgrad) or ``x + lr m / (sqrt(v_hat) + eps)`` (``"outside"``, 000 eq. (2)
    and Reddi et al. 2021, the default for the others); docs/algorithms.md Section 4. This is
    :class:`fedtheory.algorithms.server_opt.ServerOptimizer` (its ``update`` and then
    ``x + step``) as one kernel, equal to it bit for bit on NumPy.

    Parameters
    ----------
    x, m, v, v_hat, delta : arrays of one shape (..., d)
    rule : {"sgd", "adam", "yogi", "adagrad", "amsgrad"}
    lr, beta1, beta2, eps : float
        Server step size eta, moment decays, and the stabilizer.
    eps_placement : {"inside", "outside"} or None
        None: the rule's default (as :data:`fedtheory.algorithms.server_opt.SERVER_OPTIMIZERS`).

    Returns
    -------
    x, m, v, v_hat : arrays
        The new state (inputs are not modified).

    Raises
    ------
    AssumptionError
        Unknown rule or eps placement.
    """
    if rule not in SERVER_RULES:
        raise AssumptionError(f"server rule must be one of {', '.join(SERVER_RULES)}, got {rule!r}")
    placement = eps_placement or ("inside" if rule == "amsgrad" else "outside")
    if placement not in ("inside", "outside"):
        raise AssumptionError(f"eps_placement must be 'inside' or 'outside', got {eps_placement!r}")
    inside = placement == "inside"
    xp = get_namespace(x, m, v, v_hat, delta)
    if _is_cupy(xp) and rule != "sgd":
        # Scalars as scalars of the array dtype, so that fusion never promotes float32 state.
        t = np.dtype(x.dtype).type
        args = (x, m, v, v_hat, delta, t(lr), t(beta1), t(beta2), t(eps))
        return tuple(_fused("server", rule, inside)(*args))
    args = (x, m, v, v_hat, delta, float(lr), float(beta1), float(beta2), float(eps))
    return _server_body(xp, rule, inside)(*args)


def server_update_reference(x, m, v, v_hat, delta, **kw) -> tuple[np.ndarray, ...]:
    """The NumPy reference of :func:`server_update` (host copies in, host arrays out)."""

    return server_update(*(to_numpy(a) for a in (x, m, v, v_hat, delta)), **kw)
