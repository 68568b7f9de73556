"""A multilayer perceptron with hand-written forward and backward passes, batched over clients.

The parameters of one model are a flat vector of length P; a stack of models is an array
``theta`` of shape ``(..., P)`` whose leading axes are (seeds, clients) or any broadcastable
prefix. A batch of inputs is ``H`` of shape ``(..., B, F)``. The forward pass is a chain of
batched matrix products ``(..., B, h_in) @ (..., h_in, h_out)`` over the broadcast leading axes,
so one local step for all N clients of all S seeds is ``len(sizes) - 1`` calls of
:func:`numpy.matmul` (cuBLAS batched GEMMs on CuPy), never a Python loop over clients.

Layout of the flat vector, layer by layer: ``W_l`` row-major with shape ``(h_{l-1}, h_l)``, then
``b_l`` of length ``h_l``. Views into that vector (no copies) give every layer's weights.

Loss: softmax cross-entropy, ``sum_rows w_r * CE(z_r, y_r)`` with per-row weights ``w`` (1/B for
a minibatch mean, ``mask / n_i`` for a padded full-batch mean).

References
----------
.. [1] I. Goodfellow, Y. Bengio, A. Courville, *Deep Learning*, MIT Press 2016, Section 6.5
   (back-propagation for MLPs) and Section 6.2.2.3 (softmax units).
.. [2] K. He et al., "Delving Deep into Rectifiers", ICCV 2015 (He initialization for ReLU);
   X. Glorot, Y. Bengio, AISTATS 2010 (Glorot initialization for tanh).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedtheory.backend import get_namespace, resolve_dtype
from fedtheory.errors import AssumptionError
from fedtheory.problems.nn import kernels

__all__ = ["MLP"]


@dataclass(frozen=True)
class MLP:
    """Fully connected network ``sizes[0] -> sizes[1] -> ... -> sizes[-1]`` (logits).

    Parameters
    ----------
    sizes : tuple of int
        Input features, hidden widths, number of classes (at least two entries, all >= 1).
    activation : {"relu", "tanh"}
        Nonlinearity after every hidden layer; the last layer is linear (logits).

    Examples
    --------
    >>> import numpy as np
    >>> net = MLP((40, 32, 10))
    >>> theta = net.init(np.random.default_rng(0), (3, 5))     # 3 seeds x 5 clients
    >>> theta.shape
    (3, 5, 1642)
    >>> H = np.zeros((5, 8, 40)); y = np.zeros((5, 8), dtype=int)
    >>> loss, g = net.loss_grad(theta, H, y, np.full((5, 8), 1 / 8))
    >>> loss.shape, g.shape
    ((3, 5), (3, 5, 1642))
    """

    sizes: tuple[int, ...]
    activation: str = "relu"
    _offsets: tuple[tuple[int, int, int, int], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        sizes = tuple(int(s) for s in self.sizes)
        if len(sizes) < 2 or any(s < 1 for s in sizes) or sizes != tuple(self.sizes):
            raise AssumptionError(
                f"MLP sizes must be at least two positive integers (inputs, ..., classes), "
                f"got {self.sizes!r}"
            )
        kernels._check_activation(self.activation)
        offs = []
        pos = 0
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
            offs.append((pos, fan_in, fan_out, pos + fan_in * fan_out))
            pos += fan_in * fan_out + fan_out
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "_offsets", tuple(offs))

    @property
    def n_params(self) -> int:
        """P, the length of the flat parameter vector."""
        w0, fi, fo, b0 = self._offsets[-1]
        return b0 + fo

    @property
    def n_inputs(self) -> int:
        """F, the number of input features."""
        return self.sizes[0]

    @property
    def n_classes(self) -> int:
        return self.sizes[-1]

    @property
    def n_layers(self) -> int:
        return len(self._offsets)

    def unflatten(self, theta: Any) -> list[tuple[Any, Any]]:
        """Views ``[(W_l (..., h_in, h_out), b_l (..., 1, h_out)), ...]`` into ``theta (..., P)``."""
        self._check_theta(theta)
        lead = theta.shape[:-1]
        out = []
        for w0, fi, fo, b0 in self._offsets:
            W = theta[..., w0:b0].reshape(*lead, fi, fo)
            b = theta[..., b0 : b0 + fo][..., None, :]
            out.append((W, b))
        return out

    def init(self, rng: np.random.Generator, shape: tuple[int, ...] = (), dtype=None, xp=np):
        """Random parameters of shape ``(*shape, P)``: He-uniform weights for ReLU,
        Glorot-uniform for tanh, zero biases. Drawn on the host from ``rng`` (same seed, same
        bits on every backend) and moved to ``xp``."""
        dt = resolve_dtype(dtype)
        shape = tuple(int(s) for s in shape)
        theta = np.zeros((*shape, self.n_params), dtype=np.float64)
        for w0, fi, fo, b0 in self._offsets:
            if self.activation == "relu":
                a = np.sqrt(6.0 / fi)
            else:
                a = np.sqrt(6.0 / (fi + fo))
            theta[..., w0:b0] = rng.uniform(-a, a, size=(*shape, fi * fo))
        return xp.asarray(theta.astype(dt, copy=False))

    def _check_theta(self, theta: Any) -> None:
        if theta.ndim < 1 or theta.shape[-1] != self.n_params:
            raise AssumptionError(
                f"parameters must have shape (..., {self.n_params}) for MLP{self.sizes}, "
                f"got {tuple(theta.shape)}"
            )

    def _check_inputs(self, H: Any) -> None:
        if H.ndim < 2 or H.shape[-1] != self.sizes[0]:
            raise AssumptionError(
                f"inputs must have shape (..., B, {self.sizes[0]}) for MLP{self.sizes}, "
                f"got {tuple(H.shape)}"
            )

    def forward(self, theta: Any, H: Any) -> tuple[Any, list[Any]]:
        """Logits ``(..., B, C)`` and the list of layer inputs ``[H, a_1, ..., a_{L-1}]``
        (post-activation), which :meth:`backward` needs."""
        self._check_inputs(H)
        params = self.unflatten(theta)
        acts = [H]
        a = H
        last = len(params) - 1
        for layer, (W, b) in enumerate(params):
            z = a @ W
            if layer == last:
                return z + b, acts
            a = kernels.bias_act(z, b, self.activation)
            acts.append(a)
        raise AssertionError("unreachable")  # pragma: no cover

    def logits(self, theta: Any, H: Any) -> Any:
        """Forward pass only."""
        return self.forward(theta, H)[0]

    def backward(
        self, theta: Any, acts: list[Any], dlogits: Any, *, input_grad: bool = False
    ) -> Any:
        """Gradient of ``sum(dlogits * logits)`` with respect to ``theta``, flat ``(..., P)``.

        The leading shape is the broadcast of ``theta``'s and the batch's leading axes (so a
        server model ``(S, 1, P)`` applied to N clients' batches gives N gradients). With
        ``input_grad=True`` also the gradient with respect to the inputs ``H`` (for a layer
        below, e.g. :class:`fedtheory.problems.nn.conv.Conv1DNet`): returns ``(grad, dH)``.
        """
        xp = get_namespace(theta, dlogits)
        params = self.unflatten(theta)
        lead = np.broadcast_shapes(theta.shape[:-1], dlogits.shape[:-2])
        out = xp.empty((*lead, self.n_params), dtype=dlogits.dtype)
        dz = dlogits
        for layer in range(len(params) - 1, -1, -1):
            w0, fi, fo, b0 = self._offsets[layer]
            W, _ = params[layer]
            a_prev = acts[layer]
            dW = xp.matmul(xp.swapaxes(a_prev, -1, -2), dz)
            out[..., w0:b0] = xp.broadcast_to(dW, (*lead, fi, fo)).reshape(*lead, fi * fo)
            out[..., b0 : b0 + fo] = xp.broadcast_to(dz.sum(axis=-2), (*lead, fo))
            if layer > 0 or input_grad:
                da = xp.matmul(dz, xp.swapaxes(W, -1, -2))
            if layer > 0:
                dz = kernels.act_backward(da, a_prev, self.activation, overwrite=True)
        return (out, da) if input_grad else out

    def loss_grad(self, theta: Any, H: Any, labels: Any, weights: Any) -> tuple[Any, Any]:
        """Weighted cross-entropy ``sum_b w_b CE_b`` per leading index, and its gradient.

        Parameters
        ----------
        theta : array (..., P)
        H : array (..., B, F)
        labels : int array (..., B), entries in ``[0, C)``
        weights : float array (..., B)

        Returns
        -------
        loss : array (lead)
        grad : array (lead, P), lead the broadcast of theta's and the batch's leading axes
        """
        logits, acts = self.forward(theta, H)
        ce, dlogits = kernels.softmax_xent(logits, labels, weights)
        xp = get_namespace(ce)
        w = xp.broadcast_to(xp.asarray(weights, dtype=ce.dtype), ce.shape)
        loss = (w * ce).sum(axis=-1)
        grad = self.backward(theta, acts, dlogits)
        lead = grad.shape[:-1]
        return xp.broadcast_to(loss, lead), grad

    def loss(self, theta: Any, H: Any, labels: Any, weights: Any) -> Any:
        """Weighted cross-entropy only (no backward pass)."""
        logits = self.logits(theta, H)
        ce, _ = kernels.softmax_xent(logits, labels, weights)
        xp = get_namespace(ce)
        w = xp.broadcast_to(xp.asarray(weights, dtype=ce.dtype), ce.shape)
        return (w * ce).sum(axis=-1)
