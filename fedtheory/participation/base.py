"""The common interface of participation models (003, Section 3.1, Assumption 1).

A participation model says which clients take part in each round. Every model draws all rounds
of many independent runs at once::

    draw = model.sample(rounds, seeds=S, seed=0)   # (S, rounds, N)

The draw is a boolean participation mask, except for weighted sampling *with* replacement,
whose draw holds integer multiplicities (how many times each client was picked). Aggregation
weights for FedAvg-style averaging come from :meth:`ParticipationModel.weights`, and the
effective weight of each client, q_i = E[weight of i | the round is executed], from
:meth:`ParticipationModel.effective_weights` (exactly where a formula, a dynamic program or an
enumeration exists; by Monte Carlo with a standard error otherwise).

Randomness
----------
``sample(rounds, seeds, seed)`` draws the whole batch from one stream
``numpy.random.default_rng(seed)``: the result is a deterministic function of
``(rounds, seeds, seed)`` (same arguments, same bits), and a batch of ``seeds`` runs is *one*
draw of shape ``(seeds, rounds, N)``, not ``seeds`` single-seed runs glued together. A
:class:`numpy.random.Generator` may be passed as ``seed`` to continue an existing stream.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtheory.errors import AssumptionError
from fedtheory.io import renamed
from fedtheory.validation import check_int, check_memory, check_probabilities, check_seed

RULES = ("mean", "weighted", "unbiased")

EXACT_CLOSED_FORM = "exact closed form"
EXACT_DP = "exact dynamic program"
EXACT_ENUMERATION = "exact enumeration"
MONTE_CARLO = "monte carlo"


@dataclass(frozen=True)
class Estimate:
    """A vector of per-client quantities with how it was obtained.

    Attributes
    ----------
    value : ndarray, shape (N,)
        The estimate (pi_i or q_i).
    stderr : ndarray, shape (N,)
        Standard error of ``value``; zeros when ``method`` is exact.
    method : str
        ``"exact closed form"``, ``"exact dynamic program"``, ``"exact enumeration"`` or
        ``"monte carlo"``.
    samples : int
        Number of Monte Carlo rounds behind the estimate (0 when exact).
    """

    value: np.ndarray
    stderr: np.ndarray
    method: str
    samples: int = 0

    @property
    def exact(self) -> bool:
        return self.method != MONTE_CARLO

    as_dict = renamed("to_dict")

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value.tolist(),
            "stderr": self.stderr.tolist(),
            "method": self.method,
            "samples": self.samples,
        }


def exact_estimate(value: Any, method: str) -> Estimate:
    v = np.asarray(value, dtype=np.float64)
    return Estimate(v, np.zeros_like(v), method, 0)


def make_rng(seed: Any) -> np.random.Generator:
    """``numpy.random.default_rng(seed)``; a Generator passes through unchanged; a negative
    seed is refused naming it."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(check_seed(seed))


def check_rule(rule: str) -> str:
    if rule not in RULES:
        raise AssumptionError(
            f"unknown aggregation rule {rule!r}: choose one of {', '.join(RULES)}"
        )
    return rule


def check_client_probabilities(name: str, p: Any, *, n: int | None = None) -> np.ndarray:
    """Probabilities in [0, 1], none of them 0 (a client that never participates)."""
    arr = check_probabilities(name, p, n=n)
    if arr.size == 0:
        raise AssumptionError(f"{name} is empty: a participation model needs at least one client")
    zero = np.flatnonzero(arr == 0)
    if zero.size:
        i = int(zero[0])
        raise AssumptionError(
            f"{name}[{i}] = 0: client {i} never participates, so no algorithm can reach the "
            "minimizer of the full objective (003, Assumption 1 requires p_i > 0)"
        )
    return arr


def top_m_mask(keys: np.ndarray, m: int) -> np.ndarray:
    """Boolean mask of the ``m`` smallest keys along the last axis (ties broken by position)."""
    n = keys.shape[-1]
    mask = np.zeros(keys.shape, dtype=bool)
    if m == 0:
        return mask
    if m == n:
        mask[...] = True
        return mask
    idx = np.argpartition(keys, m - 1, axis=-1)[..., :m]
    np.put_along_axis(mask, idx, True, axis=-1)
    return mask


class ParticipationModel(abc.ABC):
    """Base class. Subclasses set ``n_clients`` and implement :meth:`sample`.

    Subclasses may override :meth:`inclusion_probabilities`, :meth:`effective_weights` with
    closed forms, and :meth:`support` with an exact enumeration of the per-round law.
    """

    #: True when draws are integer multiplicities rather than boolean masks.
    counts: bool = False
    #: True when rounds are independent and identically distributed.
    memoryless: bool = True
    #: Monte Carlo defaults used when no exact method exists.
    mc_rounds: int = 200
    mc_seeds: int = 200
    mc_seed: int = 20250611

    # -- to be provided by subclasses -------------------------------------------------------
    n_clients: int

    @abc.abstractmethod
    def sample(self, rounds: int, seeds: int = 1, seed: Any = 0) -> np.ndarray:
        """Draws for ``seeds`` independent runs of ``rounds`` rounds: an (S, R, N) array."""

    def sample_each(self, rounds: int, seeds: Sequence[Any]) -> np.ndarray:
        """Draws of ``rounds`` rounds for each seed from its own stream: an (S, R, N) array whose
        row s is ``sample(rounds, 1, seed=seeds[s])[0]``, bit for bit (a run's seed s gets the
        same draws in any batch, :func:`fedtheory.simulation.runner.draw_participation`).

        This default draws seed by seed; models whose draw is an elementwise transform of
        uniform keys followed by a selection along the clients (Uniform, Weighted without
        replacement) draw each seed's keys from its stream and select once for the whole batch.
        """
        return np.stack([np.asarray(self.sample(rounds, 1, seed=s))[0] for s in seeds])

    def sampling_weights(self) -> np.ndarray:
        """The client weights p that the ``"weighted"`` rule normalizes over S.

        The model's own probabilities where it has them (Weighted, Bernoulli), its stationary
        or inclusion probabilities otherwise.
        """
        return self.inclusion_probabilities().value

    def support(self) -> tuple[np.ndarray, np.ndarray, str] | None:
        """The law of one round as ``(draws, probs, method)``; ``None`` when not tractable.

        ``draws`` has shape (K, N) (bool masks or int counts), ``probs`` shape (K,) summing to 1,
        over all rounds *including* empty (skipped) ones.
        """
        return None

    # -- shared machinery --------------------------------------------------------------------
    #: Peak bytes per drawn (seed, round, client) entry: random keys, their partition, the mask.
    SAMPLE_BYTES = 24

    def _check_sample_args(self, rounds: int, seeds: int) -> tuple[int, int]:
        rounds, seeds = check_int("rounds", rounds, minimum=0), check_int("seeds", seeds, minimum=1)
        size = float(seeds) * rounds * self.n_clients
        check_memory(
            f"{seeds} x {rounds} x {self.n_clients} participation draws (seeds x rounds x clients)",
            self.SAMPLE_BYTES * size,
        )
        return rounds, seeds

    def weights(self, draw: Any, rule: str = "mean") -> np.ndarray:
        """FedAvg aggregation weights for a draw, zero off S (003, Section 3.1).

        Parameters
        ----------
        draw : array_like, shape (..., N)
            Masks (bool) or multiplicities (int) as returned by :meth:`sample`.
        rule : {"mean", "weighted", "unbiased"}
            ``"mean"``: 1/|S| (multiplicities count, c_i / sum_j c_j).
            ``"weighted"``: p_i / sum_{j in S} p_j with p = :meth:`sampling_weights`.
            ``"unbiased"``: 1 / (N pi_i) with pi_i the inclusion probability; for sampling with
            replacement c_i / (N M p_i). These weights sum to 1 only in expectation.

        Returns
        -------
        ndarray of float64, same shape as ``draw``
            Empty rounds get all-zero weights: the algorithm leaves the model unchanged.
        """
        check_rule(rule)
        d = np.asarray(draw)
        n = self.n_clients
        if d.shape[-1:] != (n,):
            raise AssumptionError(
                f"draw must have {n} entries (one per client) on its last axis, got shape {d.shape}"
            )
        c = d.astype(np.float64)
        on = c > 0
        if rule == "mean":
            tot = c.sum(axis=-1, keepdims=True)
            return np.divide(c, tot, out=np.zeros_like(c), where=tot > 0)
        if rule == "weighted":
            p = self.sampling_weights()
            s = on * p
            tot = s.sum(axis=-1, keepdims=True)
            return np.divide(s, tot, out=np.zeros_like(s), where=tot > 0)
        return self._unbiased_weights(c)

    def _unbiased_weights(self, c: np.ndarray) -> np.ndarray:
        pi = self.inclusion_probabilities().value
        return (c > 0) / (self.n_clients * pi)

    def inclusion_probabilities(self) -> Estimate:
        """pi_i = P(i in S_r) in a round (executed or skipped); exact when :meth:`support` is."""
        sup = self.support()
        if sup is not None:
            draws, probs, method = sup
            return exact_estimate(probs @ (np.asarray(draws) > 0), method)
        return self._monte_carlo(None)

    def effective_weights(self, rule: str = "mean") -> Estimate:
        """q_i = E[w_i(S) | S non-empty]: the effective weight of client i per executed round.

        FedAvg drifts towards argmin_x sum_i q_i f_i(x), the participation-weighted objective of
        003, Section 1 and Appendix C.
        """
        check_rule(rule)
        sup = self.support()
        if sup is not None:
            draws, probs, method = sup
            draws = np.asarray(draws)
            nonempty = (draws > 0).any(axis=-1)
            w = self.weights(draws, rule)
            return exact_estimate(probs[nonempty] @ w[nonempty] / probs[nonempty].sum(), method)
        return self._monte_carlo(rule)

    def empty_probability(self) -> float:
        """P(S_r is empty): the fraction of rounds skipped (exact from :meth:`support`, else MC)."""
        sup = self.support()
        if sup is not None:
            draws, probs, _ = sup
            return float(probs[~(np.asarray(draws) > 0).any(axis=-1)].sum())
        mom = monte_carlo_moments(self, "mean", self.mc_rounds, self.mc_seeds, self.mc_seed)
        return float(1.0 - mom.executed.sum() / (mom.rounds * mom.executed.size))

    def _monte_carlo(self, rule: str | None) -> Estimate:
        """Batch-means Monte Carlo over ``mc_seeds`` runs of ``mc_rounds`` rounds.

        ``rule=None`` estimates pi (over all rounds), a rule estimates q (per executed round).
        The standard error is the spread of the per-run estimates over sqrt(runs), valid also
        for models whose rounds are correlated (Markov).
        """
        mom = monte_carlo_moments(self, rule or "mean", self.mc_rounds, self.mc_seeds, self.mc_seed)
        per = mom.pi_runs if rule is None else mom.q_runs[mom.executed > 0]
        k = per.shape[0]
        value = per.mean(axis=0)
        stderr = per.std(axis=0, ddof=1) / np.sqrt(k) if k > 1 else np.full_like(value, np.inf)
        return Estimate(value, stderr, MONTE_CARLO, int(mom.rounds * mom.executed.size))

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary of the model's parameters."""
        return {"model": type(self).__name__, "n_clients": self.n_clients}


#: Largest number of (seed, round, client) entries drawn at once by the Monte Carlo estimators.
MC_CHUNK = 4_000_000
#: Largest total number of entries one Monte Carlo estimate draws (rounds are cut beyond it).
MC_BUDGET = 100_000_000


@dataclass(frozen=True)
class MonteCarloMoments:
    """Per-run averages of a participation model's draws (rows: independent runs).

    ``pi_runs`` (runs, N): fraction of rounds each client took part in; ``row_runs``
    (runs, N+1): mean of (w_0, w) with w_0 = 1 - sum w (all rounds); ``q_runs`` (runs, N): mean
    weight per executed round; ``executed`` (runs,): executed (non-empty) rounds per run.
    """

    pi_runs: np.ndarray
    row_runs: np.ndarray
    q_runs: np.ndarray
    executed: np.ndarray
    rounds: int


def monte_carlo_moments(
    model: ParticipationModel, rule: str, rounds: int, seeds: int, seed: Any
) -> MonteCarloMoments:
    """Draw ``seeds`` runs of ``rounds`` rounds in chunks of at most :data:`MC_CHUNK` entries.

    The runs come from one stream ``numpy.random.default_rng(seed)`` consumed chunk after
    chunk, so the result is deterministic. For very large N the number of rounds is reduced so
    that the whole estimate draws at most :data:`MC_BUDGET` entries.
    """
    check_rule(rule)
    n = model.n_clients
    rounds = check_int("rounds", rounds, minimum=1)
    seeds = check_int("seeds", seeds, minimum=1)
    if rounds * seeds * n > MC_BUDGET:
        rounds = max(10, min(rounds, MC_BUDGET // (seeds * n)))
        seeds = max(2, min(seeds, MC_BUDGET // (rounds * n)))
    rng = make_rng(seed)
    chunk = max(1, MC_CHUNK // (rounds * n))
    pis, rows, qs, exe = [], [], [], []
    done = 0
    while done < seeds:  # a loop over chunks of independent runs, bounded in memory
        c = min(chunk, seeds - done)
        draw = model.sample(rounds, seeds=c, seed=rng)
        w = model.weights(draw, rule)
        on = draw > 0
        ne = on.any(axis=-1)
        cnt = ne.sum(axis=1)
        pis.append(on.mean(axis=1))
        wsum = w.sum(axis=1)
        rows.append(np.concatenate([1.0 - wsum.sum(-1, keepdims=True) / rounds, wsum / rounds], -1))
        qs.append(wsum / np.maximum(cnt, 1)[:, None])
        exe.append(cnt)
        done += c
    return MonteCarloMoments(
        np.concatenate(pis), np.concatenate(rows), np.concatenate(qs), np.concatenate(exe), rounds
    )


#: Bytes per client a model may hold in its per-client vectors (p, pi, q, their standard
#: errors, ...), for the memory check of the number of clients.
PER_CLIENT_BYTES = 64


def check_clients(n: Any) -> int:
    """The number of clients N: an integer >= 1 whose per-client vectors fit in memory."""
    n = check_int("number of clients N", n, minimum=1)
    check_memory(f"a participation model of {n} clients", PER_CLIENT_BYTES * float(n))
    return n
