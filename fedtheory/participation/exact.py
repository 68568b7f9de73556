"""Exact laws of one participation round: dynamic programs and enumerations.

* :func:`poisson_binomial_pmf` and :func:`leave_one_out_pmf`: the law of |S| under independent
  Bernoulli(p_i) participation (003, Section 3.1, Case 2) and the law of |S \\ {i}| for every i.
* :func:`weighted_without_replacement_law`: the law of the *set* drawn by M successive weighted
  draws without replacement (003, Case 3; numpy's ``choice(replace=False, p=p)``), by a dynamic
  program over bitmasks of already-drawn clients. 003 notes that the inclusion probabilities of
  this scheme have no simple closed form; for N up to about 20 this program gives them exactly.
* :func:`multinomial_law`: the law of the multiplicities of M draws *with* replacement.
* :func:`all_subsets`: the 2^N masks in bitmask order, for brute-force checks and enumerations.
"""

from __future__ import annotations

from itertools import combinations, combinations_with_replacement

import numpy as np

from fedtheory.errors import AssumptionError

#: Largest N for which 2^N-state programs and enumerations are attempted by default.
MAX_ENUMERATION_CLIENTS = 20


def all_subsets(n: int) -> np.ndarray:
    """All 2^n subsets of range(n) as a (2^n, n) boolean array; row k is the bitmask k."""
    if n > 26:
        raise AssumptionError(f"enumerating 2^{n} subsets is not tractable (n <= 26)")
    k = np.arange(2**n, dtype=np.int64)
    return ((k[:, None] >> np.arange(n)) & 1).astype(bool)


def subsets_of_size(n: int, m: int) -> np.ndarray:
    """All C(n, m) subsets of size m as a boolean (C(n, m), n) array (lexicographic order)."""
    idx = np.array(list(combinations(range(n), m)), dtype=np.int64).reshape(-1, m)
    out = np.zeros((idx.shape[0], n), dtype=bool)
    np.put_along_axis(out, idx, True, axis=1)
    return out


def poisson_binomial_pmf(p: np.ndarray) -> np.ndarray:
    """P(|S| = k), k = 0..N, for independent Bernoulli(p_i) memberships.

    The classical O(N^2) dynamic program: adding client j maps the law r to
    (1 - p_j) r(k) + p_j r(k - 1).
    """
    p = np.asarray(p, dtype=np.float64)
    r = np.zeros(p.size + 1)
    r[0] = 1.0
    for j, pj in enumerate(p):
        r[1 : j + 2] = (1 - pj) * r[1 : j + 2] + pj * r[: j + 1]
        r[0] *= 1 - pj
    return r


def leave_one_out_pmf(p: np.ndarray, pmf: np.ndarray | None = None) -> np.ndarray:
    """P(|S \\ {i}| = k) for every client i: an (N, N) array, row i, column k = 0..N-1.

    Deconvolves client i out of the full law P (:func:`poisson_binomial_pmf`) with the stable
    direction for each i: forward r(k) = (P(k) - p_i r(k-1)) / (1 - p_i) when p_i <= 1/2
    (errors shrink by p_i / (1 - p_i) <= 1 per step), backward
    r(k-1) = (P(k) - (1 - p_i) r(k)) / p_i when p_i > 1/2. O(N^2), vectorized over i.
    """
    p = np.asarray(p, dtype=np.float64)
    n = p.size
    P = poisson_binomial_pmf(p) if pmf is None else pmf
    out = np.zeros((n, n))
    fwd = p <= 0.5
    if fwd.any():
        pf = p[fwd]
        r = np.zeros((pf.size, n))
        prev = np.zeros(pf.size)
        for k in range(n):
            prev = (P[k] - pf * prev) / (1 - pf)
            r[:, k] = prev
        out[fwd] = r
    bwd = ~fwd
    if bwd.any():
        pb = p[bwd]
        r = np.zeros((pb.size, n))
        nxt = np.zeros(pb.size)
        for k in range(n, 0, -1):
            nxt = (P[k] - (1 - pb) * nxt) / pb
            r[:, k - 1] = nxt
        out[bwd] = r
    return np.clip(out, 0.0, 1.0)


def weighted_without_replacement_law(p: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The law of the set of M successive weighted draws without replacement.

    Draw j picks client i outside the already drawn set T with probability
    p_i / (1 - p(T)) (numpy ``Generator.choice(n, m, replace=False, p=p)``). With f(T) the
    probability that the first |T| draws are exactly T (in any order),

        f(empty) = 1,    f(T + {i}) = sum_{i in T'} f(T) p_i / (1 - p(T)),

    a dynamic program over the bitmasks of T, layer by layer in |T|, vectorized over T.

    Returns
    -------
    masks : ndarray of bool, shape (C(N, M), N)
    probs : ndarray of float64, shape (C(N, M),)
    """
    p = np.asarray(p, dtype=np.float64)
    n = p.size
    if n > MAX_ENUMERATION_CLIENTS + 4:
        raise AssumptionError(f"the subset dynamic program needs N <= 24, got N = {n}")
    size = 1 << n
    # p(T) and |T| for every bitmask, by doubling.
    mass = np.zeros(1)
    pop = np.zeros(1, dtype=np.int64)
    for j in range(n):
        mass = np.concatenate([mass, mass + p[j]])
        pop = np.concatenate([pop, pop + 1])
    f = np.zeros(size)
    f[0] = 1.0
    bits = np.int64(1) << np.arange(n, dtype=np.int64)
    for k in range(m):
        layer = np.flatnonzero(pop == k)
        fl = f[layer]
        live = fl > 0
        layer, fl = layer[live], fl[live]
        rest = np.maximum(1.0 - mass[layer], 0.0)
        for j in range(n):
            free = (layer & bits[j]) == 0
            if not free.any():
                continue
            t = layer[free]
            denom = rest[free]
            contrib = np.divide(fl[free] * p[j], denom, out=np.zeros_like(denom), where=denom > 0)
            f[t | bits[j]] += contrib
    final = np.flatnonzero(pop == m)
    masks = ((final[:, None] >> np.arange(n)) & 1).astype(bool)
    probs = f[final]
    return masks, probs / probs.sum()


def multinomial_law(p: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The law of the multiplicities of M draws with replacement (multinomial(M, p)).

    Returns ``counts`` (K, N) int64 over all K = C(N + M - 1, M) multisets and ``probs`` (K,).
    """
    p = np.asarray(p, dtype=np.float64)
    n = p.size
    combos = np.array(list(combinations_with_replacement(range(n), m)), dtype=np.int64)
    counts = np.zeros((combos.shape[0], n), dtype=np.int64)
    rows = np.repeat(np.arange(combos.shape[0]), m)
    np.add.at(counts, (rows, combos.ravel()), 1)
    from scipy.special import gammaln  # noqa: PLC0415  (0.1 s of SciPy at start-up; this law only)

    with np.errstate(divide="ignore"):
        logp = np.log(p)
    logw = gammaln(m + 1) - gammaln(counts + 1).sum(axis=1)
    logw = logw + np.where(counts > 0, counts * logp, 0.0).sum(axis=1)
    probs = np.exp(logw)
    return counts, probs / probs.sum()


def bernoulli_law(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All 2^N masks with their probabilities prod_i p_i^{s_i} (1 - p_i)^{1 - s_i}."""
    p = np.asarray(p, dtype=np.float64)
    masks = all_subsets(p.size)
    probs = np.ones(masks.shape[0])
    for j in range(p.size):  # N <= 20 factors, each vectorized over the 2^N masks
        probs *= np.where(masks[:, j], p[j], 1 - p[j])
    return masks, probs
