"""Markov availability: one two-state chain per client (003, Section 7 lists it as future work).

Client i is either off or on. Between rounds it switches off -> on with probability a_i and
on -> off with probability b_i, independently of the other clients; its transition matrix is

    T_i = [[1 - a_i, a_i],
           [b_i,     1 - b_i]]      (rows: from off, from on)

with stationary law pi_i = a_i / (a_i + b_i) (on) and second eigenvalue lambda_i = 1 - a_i - b_i.
lambda_i > 0 makes on/off spells persistent (bursty availability), lambda_i < 0 makes them
alternate. When lambda_i = 0 the two rows are identical: the chain is memoryless and client i is a
plain Bernoulli(a_i) client; the constructor warns (:class:`MemorylessChainWarning`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedtheory.errors import AssumptionError
from fedtheory.participation.base import (
    EXACT_CLOSED_FORM,
    Estimate,
    ParticipationModel,
    check_rule,
    exact_estimate,
    make_rng,
)
from fedtheory.participation.models import Bernoulli
from fedtheory.participation.registry import need_clients, need_per_round, register_model
from fedtheory.validation import check_probabilities


class MemorylessChainWarning(UserWarning):
    """A two-state chain whose transition rows are identical (a + b = 1): it is Bernoulli."""


@dataclass(frozen=True, eq=False)
class Markov(ParticipationModel):
    """Per-client two-state Markov availability.

    Parameters
    ----------
    a : array_like, shape (N,)
        off -> on probabilities, in (0, 1].
    b : array_like, shape (N,)
        on -> off probabilities, in [0, 1].
    start : "stationary", "on", "off" or array_like of bool, shape (N,)
        Law of round 0: the stationary law (default; then every round has marginal
        P(i on) = pi_i and the process is stationary), everyone on/off, or a given state.

    Notes
    -----
    Empty rounds are skipped (all-zero weights). In the stationary regime the clients of one
    round are independent Bernoulli(pi_i), so inclusion probabilities and effective weights are
    those of :class:`~fedtheory.participation.Bernoulli` ``(pi, empty="skip")``: exact. Rounds are
    *not* independent, which is what distinguishes this model from Bernoulli in algorithms.

    Warns
    -----
    MemorylessChainWarning
        When a_i + b_i = 1 (identical rows: client i is Bernoulli(a_i)); one warning naming
        the clients concerned, or saying that the whole model is Bernoulli(a).
    """

    a: np.ndarray
    b: np.ndarray
    start: Any = "stationary"
    _law: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        a = check_probabilities("off->on probabilities a", self.a)
        b = check_probabilities("on->off probabilities b", self.b, n=a.size)
        zero = np.flatnonzero(a == 0)
        if zero.size:
            i = int(zero[0])
            raise AssumptionError(
                f"off->on probability a[{i}] = 0: client {i} never (re)joins, so no algorithm can "
                "reach the minimizer of the full objective (003, Assumption 1 requires p_i > 0)"
            )
        for name, v in (("a", a), ("b", b)):
            v = v.copy()
            v.setflags(write=False)
            object.__setattr__(self, name, v)
        if isinstance(self.start, str):
            if self.start not in ("stationary", "on", "off"):
                raise AssumptionError(
                    f"start must be 'stationary', 'on', 'off' or a boolean vector, got {self.start!r}"
                )
        else:
            s = np.asarray(self.start)
            if s.shape != (a.size,) or s.dtype != bool:
                raise AssumptionError(
                    f"start state must be a boolean vector of length {a.size}, got "
                    f"shape {s.shape} dtype {s.dtype}"
                )
        object.__setattr__(self, "memoryless", False)
        same = np.flatnonzero(np.isclose(a + b, 1.0, rtol=0, atol=1e-12))
        if same.size == a.size:
            warnings.warn(
                "every client's transition matrix has identical rows (a_i + b_i = 1): the chain "
                "is memoryless, i.e. plain Bernoulli(a) participation",
                MemorylessChainWarning,
                stacklevel=3,
            )
        elif same.size:
            shown = ", ".join(str(int(i)) for i in same[:10]) + (", ..." if same.size > 10 else "")
            warnings.warn(
                f"{same.size} of {a.size} clients ({shown}) have a transition matrix with "
                "identical rows (a_i + b_i = 1): those clients are memoryless Bernoulli(a_i)",
                MemorylessChainWarning,
                stacklevel=3,
            )

    @property
    def n_clients(self) -> int:
        return self.a.size

    def transition_matrices(self) -> np.ndarray:
        """The (N, 2, 2) per-client transition matrices, state 0 = off, 1 = on."""
        return np.stack(
            [np.stack([1 - self.a, self.a], -1), np.stack([self.b, 1 - self.b], -1)], axis=1
        )

    def stationary(self) -> np.ndarray:
        """pi_i = a_i / (a_i + b_i), the long-run fraction of rounds client i is on."""
        return self.a / (self.a + self.b)

    def second_eigenvalue(self) -> np.ndarray:
        """lambda_i = 1 - a_i - b_i: P(on at t) - pi_i = lambda_i^t (P(on at 0) - pi_i)."""
        return 1.0 - self.a - self.b

    def mixing_time(self, eps: float = 0.25) -> np.ndarray:
        """Per-client t_mix(eps) = min{t : max_x TV(P^t(x, .), pi) <= eps}.

        For a two-state chain max_x TV(P^t(x, .), pi) = max(pi, 1 - pi) |lambda|^t, hence
        t_mix = ceil(log(eps / max(pi, 1 - pi)) / log |lambda|) (1 when lambda = 0,
        inf when |lambda| = 1, e.g. a = b = 1, a periodic chain that never mixes).
        The joint chain of N independent clients mixes in about max_i t_mix(eps / N).
        """
        if not 0 < eps < 0.5:
            raise AssumptionError(f"mixing-time tolerance eps must lie in (0, 1/2), got {eps}")
        pi = self.stationary()
        lam = np.abs(self.second_eigenvalue())
        d0 = np.maximum(pi, 1 - pi)
        out = np.empty(self.n_clients)
        for_zero = lam == 0
        never = lam >= 1
        mid = ~(for_zero | never)
        out[for_zero] = 1.0
        out[never] = np.inf
        out[mid] = np.maximum(np.ceil(np.log(eps / d0[mid]) / np.log(lam[mid])), 1.0)
        return out

    def _start_state(self, rng: np.random.Generator, seeds: int) -> np.ndarray:
        n = self.n_clients
        if isinstance(self.start, str):
            if self.start == "on":
                return np.ones((seeds, n), dtype=bool)
            if self.start == "off":
                return np.zeros((seeds, n), dtype=bool)
            return rng.random((seeds, n)) < self.stationary()
        return np.broadcast_to(np.asarray(self.start), (seeds, n)).copy()

    def sample(self, rounds: int, seeds: int = 1, seed: Any = 0) -> np.ndarray:
        """Run all N chains for all seeds at once; the loop is over rounds (the chain is sequential)."""
        rounds, seeds = self._check_sample_args(rounds, seeds)
        rng = make_rng(seed)
        out = np.empty((seeds, rounds, self.n_clients), dtype=bool)
        if rounds == 0:
            return out
        x = self._start_state(rng, seeds)
        out[:, 0] = x
        for r in range(1, rounds):
            u = rng.random((seeds, self.n_clients))
            x = np.where(x, u >= self.b, u < self.a)
            out[:, r] = x
        return out

    def as_bernoulli(self) -> Bernoulli:
        """The one-round stationary marginal: Bernoulli(pi, empty="skip")."""
        if "bern" not in self._law:
            self._law["bern"] = Bernoulli(self.stationary(), empty="skip")
        return self._law["bern"]

    def sampling_weights(self) -> np.ndarray:
        return self.stationary()

    def empty_probability(self) -> float:
        """P(no client on) under the stationary law: prod_i (1 - pi_i)."""
        return self.as_bernoulli().p_empty

    def support(self):
        return self.as_bernoulli().support()

    def inclusion_probabilities(self) -> Estimate:
        """Stationary inclusion probabilities (the marginal of every round when started stationary,
        and the long-run frequency otherwise)."""
        return exact_estimate(self.stationary(), EXACT_CLOSED_FORM)

    def effective_weights(self, rule: str = "mean") -> Estimate:
        """q_i per executed round under the stationary law (that of Bernoulli(pi, "skip"))."""
        check_rule(rule)
        return self.as_bernoulli().effective_weights(rule)

    def describe(self):
        return {
            "model": "markov",
            "n_clients": self.n_clients,
            "a": self.a.tolist(),
            "b": self.b.tolist(),
            "start": self.start if isinstance(self.start, str) else "given",
            "stationary": self.stationary().tolist(),
            "second_eigenvalue": self.second_eigenvalue().tolist(),
            "mixing_time": self.mixing_time().tolist(),
        }


def default_markov_rates(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The default chain of ``make_participation("markov", n, m)``.

    a_i = M / (2N), b_i = (N - M) / (2N): stationary on-probability M / N (M clients per round on
    average), second eigenvalue 1 - a - b = 1/2 (on/off spells persist: mean on-spell 2N/(N - M)
    rounds), mixing time t_mix(1/4) = ceil(log2(4 max(pi, 1 - pi))) <= 2 rounds.
    """
    pi = m / n
    a = np.full(n, pi / 2)
    b = np.full(n, (1 - pi) / 2)
    if math.isclose(pi, 1.0):
        b[:] = 0.0
    return a, b


@register_model(
    "markov",
    reads=("m", "a", "b", "start"),
    description="a two-state chain per client (rates a, b; default stationary rate M/N)",
    exact_law=True,
)
def _markov(n: Any, m: Any, p: Any, **kw: Any) -> Markov:
    a, b = kw.get("a"), kw.get("b")
    if a is None or b is None:
        if a is not None or b is not None:
            raise AssumptionError("markov participation needs both a (off->on) and b (on->off)")
        nn, mm = need_clients("markov", n), need_per_round("markov", m)
        if not 1 <= mm <= nn:
            raise AssumptionError(f"clients per round M = {mm} must lie in [1, N = {nn}]")
        a, b = default_markov_rates(nn, mm)
    return Markov(a, b, start=kw.get("start", "stationary"))
