"""Memoryless participation models of 003, Section 3.1 (Assumption 1), and a few more.

* :class:`Full`: Case 1, S = [N].
* :class:`Uniform`: Case 3a, M of N uniformly without replacement.
* :class:`Weighted`: Case 3 ("passive arbitrary"), M successive weighted draws without
  replacement (numpy ``choice(replace=False, p=p)`` semantics) or with replacement.
* :class:`Bernoulli`: Case 2 ("active arbitrary"), client i joins with probability p_i, with an
  explicit empty-round policy.
* :class:`Cyclic`: periodic availability; :class:`PerCluster`: m per cluster;
  :class:`Trace`: a user-supplied R x N mask.

Markov availability lives in :mod:`fedtheory.participation.markov`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fedtheory.errors import AssumptionError
from fedtheory.io import read_array
from fedtheory.participation.base import (
    EXACT_CLOSED_FORM,
    EXACT_DP,
    EXACT_ENUMERATION,
    Estimate,
    ParticipationModel,
    check_client_probabilities,
    check_clients,
    check_rule,
    exact_estimate,
    make_rng,
    top_m_mask,
)
from fedtheory.participation.exact import (
    MAX_ENUMERATION_CLIENTS,
    bernoulli_law,
    leave_one_out_pmf,
    multinomial_law,
    poisson_binomial_pmf,
    subsets_of_size,
    weighted_without_replacement_law,
)
from fedtheory.participation.registry import need_clients, need_per_round, register_model
from fedtheory.validation import as_real_array, check_int

#: Largest number of support points an enumeration may have before Monte Carlo takes over.
MAX_SUPPORT = 1 << MAX_ENUMERATION_CLIENTS
#: Largest N for which the O(N^2) Poisson-binomial programs are run.
MAX_POISSON_BINOMIAL = 4096


def _check_m(
    m: Any, n: int, what: str = "clients per round M", pool: str = "the number of clients N"
) -> int:
    m = check_int(what, m)
    if m < 1:
        raise AssumptionError(f"{what} must be >= 1 (a round needs a participant), got {m}")
    if m > n:
        raise AssumptionError(f"{what} = {m} exceeds {pool} = {n}")
    return m


def _freeze(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Full(ParticipationModel):
    """Full participation, 003 Case 1: every client in every round."""

    n: int

    def __post_init__(self):
        object.__setattr__(self, "n", check_clients(self.n))

    @property
    def n_clients(self) -> int:
        return self.n

    def empty_probability(self) -> float:
        return 0.0

    def sample(self, rounds: int, seeds: int = 1, seed: Any = 0) -> np.ndarray:
        rounds, seeds = self._check_sample_args(rounds, seeds)
        return np.ones((seeds, rounds, self.n), dtype=bool)

    def support(self):
        return np.ones((1, self.n), dtype=bool), np.ones(1), EXACT_CLOSED_FORM

    def inclusion_probabilities(self) -> Estimate:
        return exact_estimate(np.ones(self.n), EXACT_CLOSED_FORM)

    def effective_weights(self, rule: str = "mean") -> Estimate:
        check_rule(rule)
        return exact_estimate(np.full(self.n, 1.0 / self.n), EXACT_CLOSED_FORM)

    def describe(self):
        return {"model": "full", "n_clients": self.n}


@register_model("full", reads=(), description="every client every round", exact_law=True)
def _full(n: Any, m: Any, p: Any, **kw: Any) -> Full:
    return Full(need_clients("full", n))


# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Uniform(ParticipationModel):
    """M of N clients uniformly without replacement, 003 Case 3a.

    Drawn as the M smallest of N i.i.d. uniform keys per round (a uniformly random M-subset).
    pi_i = M / N and q_i = 1/N under every rule (closed form).
    """

    n: int
    m: int

    def __post_init__(self):
        n = check_clients(self.n)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "m", _check_m(self.m, n))

    @property
    def n_clients(self) -> int:
        return self.n

    def empty_probability(self) -> float:
        return 0.0

    def sample(self, rounds: int, seeds: int = 1, seed: Any = 0) -> np.ndarray:
        rounds, seeds = self._check_sample_args(rounds, seeds)
        keys = make_rng(seed).random((seeds, rounds, self.n))
        return top_m_mask(keys, self.m)

    def sample_each(self, rounds: int, seeds: Sequence[Any]) -> np.ndarray:
        rounds, _ = self._check_sample_args(rounds, len(seeds))
        keys = np.stack([make_rng(s).random((rounds, self.n)) for s in seeds])
        return top_m_mask(keys, self.m)  # one selection for every seed's own keys

    def support(self):
        if math.comb(self.n, self.m) > MAX_SUPPORT:
            return None
        masks = subsets_of_size(self.n, self.m)
        return masks, np.full(masks.shape[0], 1.0 / masks.shape[0]), EXACT_ENUMERATION

    def inclusion_probabilities(self) -> Estimate:
        return exact_estimate(np.full(self.n, self.m / self.n), EXACT_CLOSED_FORM)

    def effective_weights(self, rule: str = "mean") -> Estimate:
        check_rule(rule)
        return exact_estimate(np.full(self.n, 1.0 / self.n), EXACT_CLOSED_FORM)

    def describe(self):
        return {"model": "uniform", "n_clients": self.n, "clients_per_round": self.m}


@register_model(
    "uniform", reads=("m",), description="M of N uniformly without replacement", exact_law=True
)
def _uniform(n: Any, m: Any, p: Any, **kw: Any) -> Uniform:
    return Uniform(need_clients("uniform", n), need_per_round("uniform", m))


# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Weighted(ParticipationModel):
    """M weighted draws per round, 003 Case 3 ("passive arbitrary participation").

    Without replacement (default) the round is M *successive* draws, each picking client i among
    those not yet drawn with probability proportional to p_i: the scheme of numpy's
    ``Generator.choice(n, m, replace=False, p=p)`` and of the authors' notebook. It is drawn here
    for all seeds and rounds at once by the exponential race: with E_i = -log(U_i) / p_i
    independent exponentials of rates p_i, the order of E_1, ..., E_N is distributed as the order
    of successive weighted draws without replacement (memorylessness of the exponential), so the
    M smallest keys form a set with *the same distribution* as numpy's choice. The bit stream is
    not numpy's: a given seed gives different sets than ``choice`` does.

    With ``replace=True`` the draw is multinomial(M, p): the returned array holds integer
    multiplicities (how many times each client was drawn) rather than a boolean mask.

    Parameters
    ----------
    p : array_like, shape (N,)
        Draw weights: in (0, 1], summing to 1 (as numpy requires; a relative tolerance 1e-8).
    m : int
        Draws per round, 1 <= M <= N (any M >= 1 with replacement).
    replace : bool

    Notes
    -----
    Inclusion probabilities without replacement have no simple closed form (003, Section 3.1):
    they are computed exactly by the subset dynamic program of
    :func:`~fedtheory.participation.exact.weighted_without_replacement_law` for N <= 20 and by
    Monte Carlo with a standard error beyond. With replacement pi_i = 1 - (1 - p_i)^M and
    E[c_i / M] = p_i exactly.
    """

    p: np.ndarray
    m: int
    replace: bool = False
    _law: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        p = check_client_probabilities("participation probabilities p", self.p)
        s = p.sum()
        if abs(s - 1.0) > 1e-8:
            raise AssumptionError(
                f"weighted sampling needs probabilities p that sum to 1, they sum to {s:.12g}"
            )
        p = p / s
        object.__setattr__(self, "p", _freeze(p))
        if self.replace:
            m = check_int("clients per round M", self.m)
            if m < 1:
                raise AssumptionError(f"clients per round M must be >= 1, got {m}")
        else:
            m = _check_m(self.m, p.size)
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "replace", bool(self.replace))
        object.__setattr__(self, "counts", bool(self.replace))

    @property
    def n_clients(self) -> int:
        return self.p.size

    def sampling_weights(self) -> np.ndarray:
        return self.p

    def empty_probability(self) -> float:
        return 0.0

    def sample(self, rounds: int, seeds: int = 1, seed: Any = 0) -> np.ndarray:
        rounds, seeds = self._check_sample_args(rounds, seeds)
        rng = make_rng(seed)
        if self.replace:
            return rng.multinomial(self.m, self.p, size=(seeds, rounds)).astype(np.int64)
        # Exponential race: keys E_i = -log(U_i)/p_i; U in (0, 1] avoids log(0).
        u = 1.0 - rng.random((seeds, rounds, self.n_clients))
        keys = -np.log(u) / self.p
        return top_m_mask(keys, self.m)

    def sample_each(self, rounds: int, seeds: Sequence[Any]) -> np.ndarray:
        if self.replace:
            return super().sample_each(rounds, seeds)
        rounds, _ = self._check_sample_args(rounds, len(seeds))
        u = 1.0 - np.stack([make_rng(s).random((rounds, self.n_clients)) for s in seeds])
        return top_m_mask(-np.log(u) / self.p, self.m)  # the exponential race, batched

    def support(self):
        n, m = self.n_clients, self.m
        if "support" in self._law:
            return self._law["support"]
        out = None
        if self.replace:
            if math.comb(n + m - 1, m) <= MAX_SUPPORT // 4:
                c, pr = multinomial_law(self.p, m)
                out = (c, pr, EXACT_ENUMERATION)
        elif n <= MAX_ENUMERATION_CLIENTS:
            masks, pr = weighted_without_replacement_law(self.p, m)
            out = (masks, pr, EXACT_DP)
        self._law["support"] = out
        return out

    def inclusion_probabilities(self) -> Estimate:
        if self.replace:
            return exact_estimate(1.0 - (1.0 - self.p) ** self.m, EXACT_CLOSED_FORM)
        if self.m == self.n_clients:
            return exact_estimate(np.ones(self.n_clients), EXACT_CLOSED_FORM)
        if "pi" not in self._law:
            self._law["pi"] = super().inclusion_probabilities()
        return self._law["pi"]

    def _unbiased_weights(self, c: np.ndarray) -> np.ndarray:
        if self.replace:
            return c / (self.n_clients * self.m * self.p)
        return super()._unbiased_weights(c)

    def effective_weights(self, rule: str = "mean") -> Estimate:
        check_rule(rule)
        n = self.n_clients
        if rule == "unbiased" and (self.replace or self.inclusion_probabilities().exact):
            # E[1{i in S} / (N pi_i)] = 1/N; E[c_i / (N M p_i)] = 1/N.
            return exact_estimate(np.full(n, 1.0 / n), EXACT_CLOSED_FORM)
        if rule == "mean" and self.replace:
            return exact_estimate(self.p, EXACT_CLOSED_FORM)
        if rule == "mean" and not self.replace:
            pi = self.inclusion_probabilities()
            return Estimate(pi.value / self.m, pi.stderr / self.m, pi.method, pi.samples)
        key = f"q_{rule}"
        if key not in self._law:
            self._law[key] = super().effective_weights(rule)
        return self._law[key]

    def describe(self):
        return {
            "model": "weighted",
            "n_clients": self.n_clients,
            "clients_per_round": self.m,
            "replace": self.replace,
            "p": self.p.tolist(),
        }


@register_model(
    "weighted",
    reads=("m", "p", "replace"),
    description="M successive weighted draws (probabilities p), without replacement by default",
    exact_law=True,
    problem_weights=True,
)
def _weighted(n: Any, m: Any, p: Any, **kw: Any) -> Weighted:
    if p is None:
        raise AssumptionError("weighted participation needs probabilities p (summing to 1)")
    return Weighted(p, need_per_round("weighted", m), replace=bool(kw.get("replace", False)))


# --------------------------------------------------------------------------------------------
EMPTY_POLICIES = ("redraw", "skip")


@dataclass(frozen=True, eq=False)
class Bernoulli(ParticipationModel):
    """Independent participation, 003 Case 2 ("active arbitrary participation").

    Client i joins each round with probability p_i, independently of the others and of the past.
    A round can then be empty; the policy is part of the model because it changes the law:

    * ``"redraw"`` (the authors' notebook): redraw the whole round until it is non-empty, i.e.
      condition on S != empty. pi_i = p_i / (1 - P0) with P0 = prod_i (1 - p_i).
      The empty rows of a batch are redrawn once, from the conditional law itself (first
      participant by inverse CDF, the later clients independently): the same distribution as
      redrawing until non-empty, with no loop whose length grows as P0 -> 1.
    * ``"skip"``: keep the empty round; it gets all-zero weights and the algorithm leaves the
      model unchanged. pi_i = p_i.

    Under both policies the law of an *executed* round is that of S given S != empty, so the
    effective weights q (per executed round) are the same. For the plain mean,
    q_i = p_i E[1 / (1 + |S \\ {i}|)] / (1 - P0), from the Poisson-binomial law of |S \\ {i}|
    (:func:`~fedtheory.participation.exact.leave_one_out_pmf`): an exact O(N^2) dynamic program.
    """

    p: np.ndarray
    empty: str = "redraw"
    _law: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        p = check_client_probabilities("participation probabilities p", self.p)
        object.__setattr__(self, "p", _freeze(p))
        if self.empty not in EMPTY_POLICIES:
            raise AssumptionError(
                f"empty-round policy must be one of {', '.join(EMPTY_POLICIES)}, got {self.empty!r}"
            )

    @property
    def n_clients(self) -> int:
        return self.p.size

    @property
    def p_empty(self) -> float:
        """P0 = prod_i (1 - p_i): the probability that a fresh draw is empty."""
        return float(np.prod(1.0 - self.p))

    def sampling_weights(self) -> np.ndarray:
        return self.p

    def empty_probability(self) -> float:
        return 0.0 if self.empty == "redraw" else self.p_empty

    def sample(self, rounds: int, seeds: int = 1, seed: Any = 0) -> np.ndarray:
        rounds, seeds = self._check_sample_args(rounds, seeds)
        rng = make_rng(seed)
        draw = rng.random((seeds, rounds, self.n_clients)) < self.p
        if self.empty == "redraw":
            flat = draw.reshape(-1, self.n_clients)
            empty = np.flatnonzero(~flat.any(axis=1))
            if empty.size:
                flat[empty] = self._nonempty_rows(rng, empty.size)
        return draw

    def _nonempty_rows(self, rng: np.random.Generator, k: int) -> np.ndarray:
        """k draws from the law of S given S != empty, without a rejection loop.

        The first participant J has P(J = j | S != empty) = p_j prod_{l<j} (1 - p_l) / (1 - P0)
        (drawn by inverse CDF); clients after J join independently with probability p_l. This is
        exactly the law that redrawing until non-empty produces.
        """
        p = self.p
        n = p.size
        first = p * np.concatenate([[1.0], np.cumprod(1.0 - p)[:-1]])
        cdf = np.cumsum(first)
        j = np.minimum(np.searchsorted(cdf, rng.random(k) * cdf[-1], side="right"), n - 1)
        rows = rng.random((k, n)) < p
        pos = np.arange(n)
        rows &= pos > j[:, None]
        rows[np.arange(k), j] = True
        return rows

    def support(self):
        if self.n_clients > MAX_ENUMERATION_CLIENTS:
            return None
        masks, pr = bernoulli_law(self.p)
        if self.empty == "redraw":
            pr = np.where(masks.any(axis=1), pr, 0.0)
            pr = pr / pr.sum()
        return masks, pr, EXACT_ENUMERATION

    def size_pmf(self) -> np.ndarray:
        """P(|S| = k), k = 0..N, of a round under the empty-round policy (Poisson binomial)."""
        r = poisson_binomial_pmf(self.p)
        if self.empty == "redraw":
            r[0] = 0.0
            r = r / r.sum()
        return r

    def inclusion_probabilities(self) -> Estimate:
        if self.empty == "skip":
            return exact_estimate(self.p, EXACT_CLOSED_FORM)
        return exact_estimate(self.p / (1.0 - self.p_empty), EXACT_CLOSED_FORM)

    def effective_weights(self, rule: str = "mean") -> Estimate:
        check_rule(rule)
        n = self.n_clients
        ne = 1.0 - self.p_empty
        if rule == "unbiased":
            # E[1{i in S} / (N pi_i) | S != empty] = (p_i / ne) / (N pi_i).
            pi = self.inclusion_probabilities().value
            return exact_estimate(self.p / ne / (n * pi), EXACT_CLOSED_FORM)
        if rule == "mean" and n <= MAX_POISSON_BINOMIAL:
            if "q_mean" not in self._law:
                loo = leave_one_out_pmf(self.p)  # (N, N): law of |S \ {i}|
                inv = 1.0 / np.arange(1, n + 1)
                self._law["q_mean"] = exact_estimate(self.p * (loo @ inv) / ne, EXACT_DP)
            return self._law["q_mean"]
        key = f"q_{rule}"
        if key not in self._law:
            self._law[key] = super().effective_weights(rule)
        return self._law[key]

    def describe(self):
        return {
            "model": "bernoulli",
            "n_clients": self.n_clients,
            "empty_policy": self.empty,
            "p": self.p.tolist(),
        }


@register_model(
    "bernoulli",
    reads=("m", "p", "empty"),
    description="client i joins with probability p_i (or M/N); empty rounds redrawn or skipped",
    exact_law=True,
)
def _bernoulli(n: Any, m: Any, p: Any, **kw: Any) -> Bernoulli:
    if p is None:
        if m is None:
            raise AssumptionError(
                "participation 'bernoulli' needs probabilities or clients_per_round (p_i = M/N)"
            )
        nn, mm = need_clients("bernoulli", n), need_per_round("bernoulli", m)
        if not 1 <= mm <= nn:
            raise AssumptionError(f"clients per round M = {mm} must lie in [1, N = {nn}]")
        p = np.full(nn, mm / nn)
    return Bernoulli(p, empty=kw.get("empty", "redraw"))


# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Cyclic(ParticipationModel):
    """Cyclic (periodic) availability: round r uses row (r + phase) mod P of a pattern.

    ``Cyclic(n, m)`` is round robin: round r activates clients r m, ..., r m + m - 1 (mod N),
    so every round has M clients and the period is N / gcd(N, M). ``Cyclic(pattern=P)`` takes an
    explicit (P, N) boolean pattern (e.g. time zones: a block of clients per hour).

    Parameters
    ----------
    n, m : int, optional
        Round-robin construction.
    pattern : array_like of bool, shape (P, N), optional
        Explicit pattern; every client must appear in some row.
    phase : int or "random"
        Offset of round 0 in the period; ``"random"`` draws one uniform phase per seed, which
        makes the process stationary.

    Notes
    -----
    pi_i and q_i are time averages over one period (exact enumeration of the P rows); with a
    fixed phase they are the long-run frequencies.
    """

    n: int | None = None
    m: int | None = None
    pattern: Any = None
    phase: Any = 0

    def __post_init__(self):
        if self.pattern is None:
            if self.n is None or self.m is None:
                raise AssumptionError("Cyclic needs either (n, m) or an explicit pattern")
            n = check_clients(self.n)
            m = _check_m(self.m, n)
            period = n // math.gcd(n, m)
            idx = (np.arange(period)[:, None] * m + np.arange(m)[None, :]) % n
            pat = np.zeros((period, n), dtype=bool)
            np.put_along_axis(pat, idx, True, axis=1)
        else:
            pat = _check_mask("cyclic pattern", self.pattern)
            n = pat.shape[1]
            if self.n is not None and self.n != n:
                raise AssumptionError(f"cyclic pattern has {n} columns but n = {self.n}")
        object.__setattr__(self, "pattern", _freeze(pat))
        object.__setattr__(self, "n", n)
        if not (self.phase == "random" or isinstance(self.phase, int | np.integer)):
            raise AssumptionError(f"phase must be an integer or 'random', got {self.phase!r}")
        object.__setattr__(self, "memoryless", False)

    @property
    def n_clients(self) -> int:
        return self.n

    @property
    def period(self) -> int:
        return self.pattern.shape[0]

    def sample(self, rounds: int, seeds: int = 1, seed: Any = 0) -> np.ndarray:
        rounds, seeds = self._check_sample_args(rounds, seeds)
        if self.phase == "random":
            ph = make_rng(seed).integers(0, self.period, size=seeds)
        else:
            ph = np.full(seeds, int(self.phase))
        rows = (ph[:, None] + np.arange(rounds)[None, :]) % self.period
        return self.pattern[rows]

    def support(self):
        return self.pattern, np.full(self.period, 1.0 / self.period), EXACT_ENUMERATION

    def describe(self):
        return {
            "model": "cyclic",
            "n_clients": self.n,
            "period": self.period,
            "phase": self.phase,
        }


@register_model(
    "cyclic",
    reads=("m", "pattern", "phase"),
    description="groups of M clients in a fixed cycle (or a given pattern)",
)
def _cyclic(n: Any, m: Any, p: Any, **kw: Any) -> Cyclic:
    if kw.get("pattern") is not None:
        return Cyclic(pattern=kw["pattern"], phase=kw.get("phase", 0))
    return Cyclic(need_clients("cyclic", n), need_per_round("cyclic", m), phase=kw.get("phase", 0))


# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PerCluster(ParticipationModel):
    """m clients per cluster, uniformly without replacement in each (000 Algorithm 2, CAFGA).

    Parameters
    ----------
    clusters : array_like
        Either an int vector of length N (cluster label of each client) or a list of index
        arrays (one per cluster) that partition range(N).
    m : int or array_like of int
        Clients drawn per cluster (one value for all, or one per cluster), 1 <= m_c <= n_c.

    Notes
    -----
    pi_i = m_c / n_c for client i in cluster c (closed form); drawn by sorting the keys
    label + U so that every cluster's M smallest uniform keys are selected at once.
    """

    clusters: Any
    m: Any
    _law: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        labels = _cluster_labels(self.clusters)
        _, labels = np.unique(labels, return_inverse=True)
        sizes = np.bincount(labels)
        c = sizes.size
        m = np.broadcast_to(np.asarray(self.m), (c,))
        checked = [
            _check_m(v, int(nc), f"clients per cluster m (cluster {k})", "its cluster size n")
            for k, (v, nc) in enumerate(zip(m, sizes, strict=True))
        ]
        ms = np.array(checked, dtype=np.int64)
        object.__setattr__(self, "clusters", _freeze(labels))
        object.__setattr__(self, "m", _freeze(ms))
        object.__setattr__(self, "_sizes", _freeze(sizes))

    @property
    def n_clients(self) -> int:
        return self.clusters.size

    @property
    def n_clusters(self) -> int:
        return self._sizes.size

    def empty_probability(self) -> float:
        return 0.0

    def sample(self, rounds: int, seeds: int = 1, seed: Any = 0) -> np.ndarray:
        rounds, seeds = self._check_sample_args(rounds, seeds)
        n = self.n_clients
        keys = make_rng(seed).random((seeds, rounds, n)) + self.clusters
        order = np.argsort(keys, axis=-1)  # clusters contiguous, uniform order within each
        start = np.concatenate([[0], np.cumsum(self._sizes)[:-1]])
        sorted_labels = np.sort(self.clusters)
        chosen = (np.arange(n) - start[sorted_labels]) < self.m[sorted_labels]
        mask = np.zeros((seeds, rounds, n), dtype=bool)
        np.put_along_axis(mask, order, np.broadcast_to(chosen, mask.shape), axis=-1)
        return mask

    def inclusion_probabilities(self) -> Estimate:
        return exact_estimate(self.m[self.clusters] / self._sizes[self.clusters], EXACT_CLOSED_FORM)

    def effective_weights(self, rule: str = "mean") -> Estimate:
        check_rule(rule)
        pi = self.inclusion_probabilities().value
        if rule == "unbiased":
            return exact_estimate(np.full(self.n_clients, 1.0 / self.n_clients), EXACT_CLOSED_FORM)
        if rule == "mean":
            return exact_estimate(pi / self.m.sum(), EXACT_CLOSED_FORM)
        # weighted: p = pi, sum over S of pi is fixed (sum_c m_c^2 / n_c): closed form too.
        tot = np.sum(self.m**2 / self._sizes)
        return exact_estimate(pi * pi / tot, EXACT_CLOSED_FORM)

    def support(self):
        if "support" in self._law:
            return self._law["support"]
        total = math.prod(
            math.comb(int(a), int(b)) for a, b in zip(self._sizes, self.m, strict=True)
        )
        out = None
        if total <= MAX_SUPPORT:
            masks = np.zeros((1, self.n_clients), dtype=bool)
            for c in range(self.n_clusters):  # loop over clusters, vectorized over sets
                members = np.flatnonzero(self.clusters == c)
                sub = subsets_of_size(members.size, int(self.m[c]))
                block = np.zeros((sub.shape[0], self.n_clients), dtype=bool)
                block[:, members] = sub
                masks = (masks[:, None, :] | block[None, :, :]).reshape(-1, self.n_clients)
            out = (masks, np.full(masks.shape[0], 1.0 / masks.shape[0]), EXACT_ENUMERATION)
        self._law["support"] = out
        return out

    def describe(self):
        return {
            "model": "cluster",
            "n_clients": self.n_clients,
            "cluster_sizes": self._sizes.tolist(),
            "clients_per_cluster": self.m.tolist(),
        }


@register_model(
    "cluster",
    reads=("m", "clusters", "n_clusters"),
    description="m of each cluster uniformly (C equal clusters, or given labels)",
)
def _cluster(n: Any, m: Any, p: Any, **kw: Any) -> PerCluster:
    clusters = kw.get("clusters")
    if clusters is None:
        nn, c = need_clients("cluster", n), kw.get("n_clusters")
        if c is None or m is None:
            raise AssumptionError(
                "participation 'cluster' needs clusters C and clients_per_round m (per cluster)"
            )
        c = check_int("the number of clusters C", c, minimum=1)
        if nn % c:
            raise AssumptionError(
                f"clusters = {c} must divide the N = {nn} clients into equal clusters"
            )
        if check_int("clients per round m", m, minimum=1) > nn // c:
            raise AssumptionError(f"clients_per_round = {m} exceeds the cluster size n = {nn // c}")
        clusters = np.repeat(np.arange(c), nn // c)
    return PerCluster(clusters, need_per_round("cluster", m))


def _cluster_labels(clusters: Any) -> np.ndarray:
    if isinstance(clusters, list | tuple) and clusters and np.ndim(clusters[0]) == 1:
        idx = [np.asarray(c, dtype=np.int64) for c in clusters]
        allidx = np.concatenate(idx)
        n = allidx.size
        if np.any(np.sort(allidx) != np.arange(n)):
            raise AssumptionError(
                "clusters must partition the clients 0..N-1: every index exactly once"
            )
        labels = np.empty(n, dtype=np.int64)
        for k, c in enumerate(idx):
            labels[c] = k
        return labels
    labels = np.asarray(clusters)
    if labels.ndim != 1 or labels.size == 0 or not np.issubdtype(labels.dtype, np.integer):
        raise AssumptionError(
            "clusters must be an integer label per client or a list of index arrays"
        )
    return labels


# --------------------------------------------------------------------------------------------
def _check_mask(name: str, mask: Any) -> np.ndarray:
    """A (R, N) participation mask: boolean, or 0/1 numbers; every client present somewhere."""
    arr = as_real_array(name, mask, dtype=None)
    if arr.ndim != 2:
        raise AssumptionError(
            f"{name} must be a 2-D (rounds x clients) array, got shape {arr.shape}"
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise AssumptionError(f"{name} is empty (shape {arr.shape})")
    if arr.dtype != bool:
        if not (np.issubdtype(arr.dtype, np.number)):
            raise AssumptionError(f"{name} must be boolean (or 0/1), got dtype {arr.dtype}")
        bad = ~np.isin(arr, (0, 1))
        if bad.any():
            r, c = (int(i) for i in np.argwhere(bad)[0])
            raise AssumptionError(
                f"{name} must be boolean (or 0/1): entry [{r}, {c}] is {arr[r, c]!r}"
            )
        arr = arr.astype(bool)
    never = np.flatnonzero(~arr.any(axis=0))
    if never.size:
        i = int(never[0])
        raise AssumptionError(
            f"{name}: client {i} never participates, so no algorithm can reach the minimizer "
            "of the full objective (003, Assumption 1 requires p_i > 0)"
        )
    return arr


@dataclass(frozen=True, eq=False)
class Trace(ParticipationModel):
    """A participation trace supplied by the user: an (R, N) boolean mask.

    Every seed replays the same trace (it is data, not a random law). Asking for more rounds
    than the trace holds is an error unless ``cycle=True``, which repeats it. pi_i and q_i are
    the empirical frequencies over the trace's rows (exact enumeration of its empirical law).
    """

    mask: Any
    cycle: bool = False

    def __post_init__(self):
        object.__setattr__(self, "mask", _freeze(_check_mask("participation trace", self.mask)))
        object.__setattr__(self, "memoryless", False)

    @classmethod
    def from_file(cls, path: str | Path, *, cycle: bool = False) -> Trace:
        """Load a trace from ``.npy`` or a text file (``.csv``/``.txt``, one row per round)."""
        given = os.fsdecode(os.fspath(path))
        arr = read_array(given, what="an R x N trace")
        if arr.ndim == 1:  # one round of N clients, or N rounds of one client?
            raise AssumptionError(
                f"the trace {given} holds one row or one column ({arr.size} values): an R x N "
                "trace has a row per round and a column per client; write a single round as a "
                "1 x N array (np.save(path, mask[None, :]))"
            )
        return cls(_check_mask(f"the trace {given}", arr), cycle=cycle)

    @property
    def n_clients(self) -> int:
        return self.mask.shape[1]

    @property
    def n_rounds(self) -> int:
        return self.mask.shape[0]

    def sample(self, rounds: int, seeds: int = 1, seed: Any = 0) -> np.ndarray:
        rounds, seeds = self._check_sample_args(rounds, seeds)
        if rounds > self.n_rounds and not self.cycle:
            raise AssumptionError(
                f"the trace has {self.n_rounds} rounds, {rounds} were asked for "
                "(pass cycle=True to repeat it)"
            )
        rows = np.arange(rounds) % self.n_rounds
        return np.broadcast_to(self.mask[rows], (seeds, rounds, self.n_clients)).copy()

    def support(self):
        return self.mask, np.full(self.n_rounds, 1.0 / self.n_rounds), EXACT_ENUMERATION

    def describe(self):
        return {"model": "trace", "n_clients": self.n_clients, "rounds": self.n_rounds}


@register_model(
    "trace",
    reads=("mask", "path", "cycle"),
    description="a recorded R x N participation mask (array or file)",
    settings_only=False,
)
def _trace(n: Any, m: Any, p: Any, **kw: Any) -> Trace:
    if kw.get("mask") is not None:
        return Trace(kw["mask"], cycle=bool(kw.get("cycle", False)))
    if kw.get("path") is not None:
        return Trace.from_file(kw["path"], cycle=bool(kw.get("cycle", False)))
    raise AssumptionError("trace participation needs a mask or a path to an R x N file")
