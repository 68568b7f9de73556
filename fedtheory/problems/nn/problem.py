"""A neural-network classification task as a federated :class:`~fedtheory.problems.base.Problem`.

``f_i(theta)`` is the mean softmax cross-entropy of the MLP with parameters ``theta`` on client
i's data and ``f = (1/N) sum_i f_i`` (docs/algorithms.md, Notation). :meth:`MLPProblem.grads` takes
the stacked client models ``X (..., N, P)`` and returns every client's gradient in one batched
forward/backward pass, so every federated algorithm of the simulator runs on it unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedtheory.backend import get_backend, get_namespace, resolve_dtype, to_numpy
from fedtheory.errors import AssumptionError
from fedtheory.problems.nn.data import FederatedData
from fedtheory.problems.nn.model import MLP
from fedtheory.validation import check_int

__all__ = ["MLPProblem"]


class MLPProblem:
    """Federated softmax classification with an :class:`~fedtheory.problems.nn.model.MLP`.

    Parameters
    ----------
    data : FederatedData
        Stacked client shards (N clients) and a test set.
    hidden : tuple of int
        Hidden widths; the input and output sizes come from ``data``.
    activation : {"relu", "tanh"}
    batch_size : int or None
        With an ``rng``, :meth:`grads` draws ``batch_size`` rows per client per call, uniformly
        with replacement from the client's own rows (FederatedData's stacking note). ``None``:
        full-batch (exact) gradients always.
    xp : module or None
        Array namespace (default: the configured backend, see :func:`fedtheory.backend.get_backend`).
    dtype : float64 (default) or float32
    model : MLP or Conv1DNet, optional
        A network to use instead of ``MLP((F, *hidden, C), activation)`` (``hidden`` and
        ``activation`` are then ignored); its input and class counts must match ``data``.

    Attributes
    ----------
    n_clients, dim : int
        N and P (the number of parameters).
    x_star, f_star, L, mu : None
        Not known for a neural network.
    model : MLP

    Examples
    --------
    >>> import numpy as np
    >>> from fedtheory.problems.nn.data import federated_synthetic
    >>> prob = MLPProblem(federated_synthetic(1.0, 1.0, 5, samples=60), hidden=(16,), batch_size=8)
    >>> X = np.broadcast_to(prob.init(np.random.default_rng(0)), (2, 5, prob.dim))
    >>> prob.grads(X, np.random.default_rng(1)).shape
    (2, 5, 1146)
    """

    x_star = None
    f_star = None
    L = None
    mu = None

    def __init__(
        self,
        data: FederatedData,
        hidden: tuple[int, ...] = (64, 64),
        activation: str = "relu",
        batch_size: int | None = 50,
        xp=None,
        dtype=None,
        model: Any = None,
    ) -> None:
        if not isinstance(data, FederatedData):
            raise AssumptionError(f"data must be a FederatedData, got {type(data).__name__}")
        self.data = data
        if model is None:
            model = MLP((data.n_features, *hidden, data.n_classes), activation)
        elif (model.n_inputs, model.n_classes) != (data.n_features, data.n_classes):
            raise AssumptionError(
                f"the model takes {model.n_inputs} features and {model.n_classes} classes but the "
                f"data has {data.n_features} features and {data.n_classes} classes"
            )
        self.model = model
        self.batch_size = (
            None if batch_size is None else check_int("batch_size", batch_size, minimum=1)
        )
        self.xp = get_backend() if xp is None else xp
        self.dtype = resolve_dtype(dtype)
        xp = self.xp
        self.n_clients = data.n_clients
        self.dim = self.model.n_params
        self._x = xp.asarray(data.x, dtype=self.dtype)
        self._y = xp.asarray(data.y)
        self._counts = xp.asarray(data.counts)
        # Full-batch row weights 1{b < n_i} / n_i: f_i is the mean over client i's own rows.
        self._w_full = xp.asarray(data.mask / data.counts[:, None], dtype=self.dtype)
        self._x_test = xp.asarray(data.x_test, dtype=self.dtype)
        self._y_test = xp.asarray(data.y_test)
        self._x_train = xp.asarray(
            np.concatenate([data.x[i, :c] for i, c in enumerate(data.counts)]), dtype=self.dtype
        )
        self._y_train = xp.asarray(
            np.concatenate([data.y[i, :c] for i, c in enumerate(data.counts)])
        )

    def __repr__(self) -> str:
        return (
            f"MLPProblem({type(self.model).__name__}{self.model.sizes}, {self.model.activation}, N={self.n_clients}, "
            f"P={self.dim}, batch_size={self.batch_size})"
        )

    # -- helpers --------------------------------------------------------------------------

    def init(self, rng: np.random.Generator, shape: tuple[int, ...] = ()) -> Any:
        """Random initial parameters ``(*shape, P)`` (see :meth:`MLP.init`)."""
        return self.model.init(rng, shape, dtype=self.dtype, xp=self.xp)

    def _check_X(self, X: Any) -> Any:
        X = self.xp.asarray(X, dtype=self.dtype)
        if X.ndim < 2 or X.shape[-2:] != (self.n_clients, self.dim):
            raise AssumptionError(
                f"client models must have shape (..., {self.n_clients}, {self.dim}), got {tuple(X.shape)}"
            )
        return X

    def _check_x(self, x: Any) -> Any:
        x = self.xp.asarray(x, dtype=self.dtype)
        if x.ndim < 1 or x.shape[-1] != self.dim:
            raise AssumptionError(
                f"server models must have shape (..., {self.dim}), got {tuple(x.shape)}"
            )
        return x

    def sample_batch(self, rng: np.random.Generator, lead: tuple[int, ...] = ()) -> tuple[Any, Any]:
        """Row indices of one minibatch per client: ``(*lead, N, B)`` integers, row b of client i
        uniform on ``[0, n_i)`` (with replacement). Drawn on the host from ``rng`` (a
        :class:`numpy.random.Generator` or a :class:`fedtheory.algorithms.base.SeedRng`), so the
        same seed gives the same bits on every backend."""
        B = self.batch_size
        # ``rng`` is a numpy Generator or the simulator's SeedRng (seed axis first); the
        # uniforms go to the device and stay there (no round trip through the host).
        xp, counts = self.xp, self._counts[:, None]
        u = xp.asarray(rng.random((*lead, self.n_clients, B)))
        return xp.minimum((u * counts).astype(np.int64), counts - 1)

    # -- the Problem protocol -------------------------------------------------------------

    def grads(self, X: Any, rng: np.random.Generator | None = None) -> Any:
        """Every client's gradient at its own model, ``(..., N, P) -> (..., N, P)``.

        With ``rng`` and a ``batch_size``: the gradient of the mean loss over a minibatch of
        ``batch_size`` rows drawn per client (and per leading index) from ``rng``. Otherwise the
        exact gradient of f_i.
        """
        X = self._check_X(X)
        if rng is None or self.batch_size is None:
            _, g = self.model.loss_grad(X, self._x, self._y, self._w_full)
            return g
        idx = self.sample_batch(rng, X.shape[:-2])
        rows = self.xp.arange(self.n_clients)[:, None]
        H = self._x[rows, idx]
        y = self._y[rows, idx]
        _, g = self.model.loss_grad(X, H, y, 1.0 / self.batch_size)
        return g

    def grads_at(self, Xs: Any, clients: Any, rng: np.random.Generator | None = None) -> Any:
        """The gradients of the clients ``clients (S, M)`` at their models ``Xs (S, M, P)``.

        The optional subset path of :class:`~fedtheory.problems.base.Problem`: row ``[s, m]``
        equals row ``clients[s, m]`` of :meth:`grads` at the same model for full-batch gradients
        (to rounding). With ``rng`` and a ``batch_size`` it draws ``(S, M, batch_size)`` uniforms
        (the M selected clients only, not all N as :meth:`grads` does), so the minibatches differ
        from the full path's but the same seed still gives the same bits.
        """
        xp = self.xp
        Xs = xp.asarray(Xs, dtype=self.dtype)
        clients = xp.asarray(clients)
        if Xs.ndim != 3 or Xs.shape[-1] != self.dim or clients.shape != Xs.shape[:2]:
            raise AssumptionError(
                f"grads_at needs Xs (S, M, {self.dim}) and clients (S, M), got "
                f"{tuple(Xs.shape)} and {tuple(clients.shape)}"
            )
        if rng is None or self.batch_size is None:
            _, g = self.model.loss_grad(
                Xs, self._x[clients], self._y[clients], self._w_full[clients]
            )
            return g
        counts = self._counts[clients][..., None]  # (S, M, 1), on the device
        u = xp.asarray(rng.random((*clients.shape, self.batch_size)))
        idx = xp.minimum((u * counts).astype(np.int64), counts - 1)
        rows = clients[..., None]
        _, g = self.model.loss_grad(
            Xs, self._x[rows, idx], self._y[rows, idx], 1.0 / self.batch_size
        )
        return g

    def client_losses(self, X: Any) -> Any:
        """f_i(X[..., i, :]) for every client, ``(..., N, P) -> (..., N)``."""
        X = self._check_X(X)
        return self.model.loss(X, self._x, self._y, self._w_full)

    def loss(self, x: Any) -> Any:
        """f(x) = (1/N) sum_i f_i(x) for server models ``x (..., P)``; returns ``(...)``."""
        x = self._check_x(x)
        return self.model.loss(x[..., None, :], self._x, self._y, self._w_full).mean(axis=-1)

    def full_grad(self, x: Any) -> Any:
        """grad f(x) = (1/N) sum_i grad f_i(x) for ``x (..., P)``."""
        x = self._check_x(x)
        _, g = self.model.loss_grad(x[..., None, :], self._x, self._y, self._w_full)
        return g.mean(axis=-2)

    def accuracy(self, x: Any, split: str = "test") -> np.ndarray:
        """Classification accuracy of server models ``x (..., P)`` on ``split`` ("test" or
        "train", the union of the clients' rows); a NumPy array of shape ``(...)``."""
        x = self._check_x(x)
        if split == "test":
            H, y = self._x_test, self._y_test
        elif split == "train":
            H, y = self._x_train, self._y_train
        else:
            raise AssumptionError(f"split must be 'test' or 'train', got {split!r}")
        logits = self.model.logits(x, H)
        xp = get_namespace(logits)
        return to_numpy(xp.mean(xp.argmax(logits, axis=-1) == y, axis=-1))
