"""A small 1-D convolutional network in the MLP's style: flat parameters, batched over clients.

``Conv1DNet`` = ``n_conv`` convolution layers (valid padding, stride s, activation after each),
then the flattened feature map goes through an :class:`~fedtheory.problems.nn.model.MLP`-style dense head.
MNIST-1D is built for such models (Greydanus & Kobak 2024 use a small CNN on it).

A convolution is an im2col product: the input ``(..., B, L, C_in)`` is cut into windows
``(..., B, L_out, C_in * k)`` (a strided view, copied once) and multiplied by
``W (..., C_in * k, C_out)``, so every client's layer is one batched matmul, like a dense layer.
Backward: ``dW = cols^T dz`` summed over batch and positions (one matmul on the merged axis),
``dcols = dz W^T``, and the input gradient adds ``dcols`` back tap by tap (k strided slice
additions: a loop over the kernel width, never over clients).

Layout of the flat parameters: for each convolution ``W_l`` as ``(k, C_in, C_out)`` row-major,
then ``b_l (C_out)``; then the dense head's layout (:class:`MLP`).

References
----------
.. [1] V. Dumoulin, F. Visin, "A guide to convolution arithmetic for deep learning", 2016
   (output length ``(L - k) // s + 1``).
.. [2] K. Chellapilla, S. Puri, P. Simard, "High Performance Convolutional Neural Networks for
   Document Processing", 2006 (im2col).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedtheory.backend import get_namespace, resolve_dtype
from fedtheory.errors import AssumptionError
from fedtheory.problems.nn import kernels
from fedtheory.problems.nn.model import MLP

__all__ = ["Conv1DNet"]


def _windows(xp: Any, H: Any, k: int, stride: int) -> Any:
    """im2col: ``(..., B, L, C) -> (..., B, L_out, k * C)`` (tap-major, then channel)."""
    L = H.shape[-2]
    L_out = (L - k) // stride + 1
    cols = xp.stack(
        [H[..., j : j + stride * (L_out - 1) + 1 : stride, :] for j in range(k)], axis=-2
    )
    return cols.reshape(*cols.shape[:-2], k * H.shape[-1])


@dataclass(frozen=True)
class Conv1DNet:
    """1-D CNN: convolutions (``channels``, ``kernel``, ``stride``) then a dense head.

    Parameters
    ----------
    length : int
        Input length L (MNIST-1D: 40). Inputs are ``(..., B, L)`` (one channel) or
        ``(..., B, L * C_in)`` flattened position-major when ``in_channels > 1``.
    n_classes : int
    channels : tuple of int
        Output channels of each convolution.
    kernel, stride : int
    hidden : tuple of int
        Widths of the dense head's hidden layers.
    activation : {"relu", "tanh"}
    in_channels : int

    Examples
    --------
    >>> import numpy as np
    >>> net = Conv1DNet(40, 10, channels=(8,), kernel=5, stride=2, hidden=(16,))
    >>> theta = net.init(np.random.default_rng(0), (4,))
    >>> net.logits(theta, np.zeros((4, 3, 40))).shape
    (4, 3, 10)
    """

    length: int
    n_classes: int
    channels: tuple[int, ...] = (16, 16)
    kernel: int = 5
    stride: int = 2
    hidden: tuple[int, ...] = (64,)
    activation: str = "relu"
    in_channels: int = 1
    _conv: tuple[tuple[int, int, int, int, int], ...] = field(init=False, repr=False, compare=False)
    _head: MLP = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        kernels._check_activation(self.activation)
        for name in ("length", "n_classes", "kernel", "stride", "in_channels"):
            v = getattr(self, name)
            if isinstance(v, bool) or int(v) != v or v < 1:
                raise AssumptionError(f"{name} must be a positive integer, got {v!r}")
        chans = tuple(int(c) for c in self.channels)
        if not chans or any(c < 1 for c in chans):
            raise AssumptionError(f"channels must be positive integers, got {self.channels!r}")
        conv, pos, L, cin = [], 0, int(self.length), int(self.in_channels)
        for cout in chans:
            L_out = (L - self.kernel) // self.stride + 1
            if L_out < 1:
                raise AssumptionError(
                    f"a length-{L} signal is shorter than the kernel {self.kernel}: use fewer "
                    "or narrower convolutions"
                )
            conv.append((pos, cin, cout, L_out, pos + self.kernel * cin * cout))
            pos += self.kernel * cin * cout + cout
            L, cin = L_out, cout
        object.__setattr__(self, "channels", chans)
        object.__setattr__(self, "_conv", tuple(conv))
        head = MLP((L * cin, *self.hidden, self.n_classes), self.activation)
        object.__setattr__(self, "_head", head)

    @property
    def sizes(self) -> tuple:
        """A description of the architecture (for reports)."""
        return ("conv", self.length, self.channels, self.kernel, self.stride, *self._head.sizes)

    @property
    def n_inputs(self) -> int:
        """F = L * C_in, the flattened input length."""
        return self.length * self.in_channels

    @property
    def n_conv_params(self) -> int:
        pos, cin, cout, _, b0 = self._conv[-1]
        return b0 + cout

    @property
    def n_params(self) -> int:
        return self.n_conv_params + self._head.n_params

    def _check_theta(self, theta: Any) -> None:
        if theta.ndim < 1 or theta.shape[-1] != self.n_params:
            raise AssumptionError(
                f"parameters must have shape (..., {self.n_params}) for {self!r}, got {tuple(theta.shape)}"
            )

    def _conv_params(self, theta: Any) -> list[tuple[Any, Any]]:
        lead = theta.shape[:-1]
        out = []
        for w0, cin, cout, _, b0 in self._conv:
            W = theta[..., w0:b0].reshape(*lead, 1, self.kernel * cin, cout)
            b = theta[..., b0 : b0 + cout].reshape(*lead, 1, 1, cout)
            out.append((W, b))
        return out

    def init(self, rng: np.random.Generator, shape: tuple[int, ...] = (), dtype=None, xp=np):
        """He-uniform (ReLU) / Glorot-uniform (tanh) weights with fan-in ``k * C_in``, zero biases;
        drawn on the host from ``rng``."""
        dt = resolve_dtype(dtype)
        shape = tuple(int(s) for s in shape)
        theta = np.zeros((*shape, self.n_params))
        for w0, cin, cout, _, b0 in self._conv:
            fi, fo = self.kernel * cin, self.kernel * cout
            a = np.sqrt(6.0 / fi) if self.activation == "relu" else np.sqrt(6.0 / (fi + fo))
            theta[..., w0:b0] = rng.uniform(-a, a, size=(*shape, b0 - w0))
        theta[..., self.n_conv_params :] = self._head.init(rng, shape)
        return xp.asarray(theta.astype(dt, copy=False))

    def forward(self, theta: Any, H: Any) -> tuple[Any, list[Any]]:
        """Logits ``(..., B, C)`` and the cache ``[cols_1, a_1, ..., cols_n, a_n, head acts]``."""
        self._check_theta(theta)
        xp = get_namespace(theta, H)
        L0 = self.length * self.in_channels
        if H.ndim < 2 or H.shape[-1] != L0:
            raise AssumptionError(f"inputs must have shape (..., B, {L0}), got {tuple(H.shape)}")
        a = H.reshape(*H.shape[:-1], self.length, self.in_channels)
        cache = []
        for W, b in self._conv_params(theta):
            cols = _windows(xp, a, self.kernel, self.stride)
            a = kernels.bias_act(xp.matmul(cols, W), b, self.activation)
            cache.append((cols, a))
        flat = a.reshape(*a.shape[:-2], a.shape[-2] * a.shape[-1])
        logits, head_acts = self._head.forward(theta[..., self.n_conv_params :], flat)
        return logits, [cache, head_acts]

    def logits(self, theta: Any, H: Any) -> Any:
        return self.forward(theta, H)[0]

    def backward(self, theta: Any, acts: list[Any], dlogits: Any) -> Any:
        """Gradient of ``sum(dlogits * logits)`` with respect to ``theta``, flat ``(..., P)``."""
        xp = get_namespace(theta, dlogits)
        cache, head_acts = acts
        nc = self.n_conv_params
        g_head, dflat = self._head.backward(theta[..., nc:], head_acts, dlogits, input_grad=True)
        lead = g_head.shape[:-1]
        out = xp.empty((*lead, self.n_params), dtype=g_head.dtype)
        out[..., nc:] = g_head
        _, _, c_last, L_last, _ = self._conv[-1]
        da = dflat.reshape(*dflat.shape[:-1], L_last, c_last)
        params = self._conv_params(theta)
        k, s = self.kernel, self.stride
        for layer in range(len(self._conv) - 1, -1, -1):
            w0, cin, cout, L_out, b0 = self._conv[layer]
            cols, a = cache[layer]
            dz = kernels.act_backward(da, a, self.activation, overwrite=True)
            cm = cols.reshape(*cols.shape[:-3], -1, cols.shape[-1])  # (..., B * L_out, k C_in)
            dm = dz.reshape(*dz.shape[:-3], -1, cout)
            dW = xp.matmul(xp.swapaxes(cm, -1, -2), dm)
            out[..., w0:b0] = xp.broadcast_to(dW, (*lead, k * cin, cout)).reshape(
                *lead, k * cin * cout
            )
            out[..., b0 : b0 + cout] = xp.broadcast_to(dm.sum(axis=-2), (*lead, cout))
            if layer > 0:
                W, _ = params[layer]
                dcols = xp.matmul(dz, xp.swapaxes(W, -1, -2))
                dcols = dcols.reshape(*dcols.shape[:-1], k, cin)
                L_in = self._conv[layer - 1][3]
                da = xp.zeros((*dcols.shape[:-3], L_in, cin), dtype=dcols.dtype)
                for j in range(k):  # scatter the windows back, one kernel tap at a time
                    da[..., j : j + s * (L_out - 1) + 1 : s, :] += dcols[..., j, :]
        return out

    def loss_grad(self, theta: Any, H: Any, labels: Any, weights: Any) -> tuple[Any, Any]:
        """Weighted cross-entropy per leading index and its gradient (as :meth:`MLP.loss_grad`)."""
        logits, acts = self.forward(theta, H)
        ce, dlogits = kernels.softmax_xent(logits, labels, weights)
        xp = get_namespace(ce)
        w = xp.broadcast_to(xp.asarray(weights, dtype=ce.dtype), ce.shape)
        loss = (w * ce).sum(axis=-1)
        grad = self.backward(theta, acts, dlogits)
        return xp.broadcast_to(loss, grad.shape[:-1]), grad

    def loss(self, theta: Any, H: Any, labels: Any, weights: Any) -> Any:
        """Weighted cross-entropy only."""
        ce, _ = kernels.softmax_xent(self.logits(theta, H), labels, weights)
        xp = get_namespace(ce)
        return (xp.broadcast_to(xp.asarray(weights, dtype=ce.dtype), ce.shape) * ce).sum(axis=-1)
