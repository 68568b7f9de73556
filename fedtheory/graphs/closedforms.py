"""Closed-form spectral gaps, derived with sympy and checked against the numerics.

Derivation (run once, cached): a symmetric circulant with self-weight ``a`` and neighbour weight
``b`` at offsets +-1 has the eigenvalues ``lambda_k = sum_j c_j omega^(jk)`` of the discrete
Fourier transform; sympy simplifies them to ``a + 2 b cos(2 pi k / n)``. The 2-D torus is the
Kronecker sum of two cycles, the hypercube Q_d the d-fold Kronecker sum of K_2 (eigenvalues
``d - 2k`` of its adjacency, multiplicity ``C(d, k)``). With uniform-degree weights (ring 1/3,
torus 1/5, hypercube 1/(d+1), complete 1/n) this gives ``rho``, and sympy rewrites the gaps
``1 - lambda_2`` and ``1 + lambda_n`` with half-angle identities (e.g. ring:
``1 - lambda_1 = (4/3) sin^2(pi/n)``) so that they evaluate without cancellation for n = 10^6.

Also: the static exponential graph of Ying et al. (2021, Prop. 1) for n a power of 2,
``rho = 1 - 2 / (1 + log2 n)``, and the effective number of neighbours of a ring
(Vogels et al. 2022) from its closed-form spectrum.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from fedtheory.errors import AssumptionError
from fedtheory.graphs.topologies import torus_shape
from fedtheory.validation import check_int


class _Sympy:
    """sympy, imported on first use: a third of a second at start-up that every command
    importing :mod:`fedtheory.graphs` would pay, for closed forms derived once and cached."""

    def __getattr__(self, name: str) -> Any:
        import sympy  # noqa: PLC0415  (lazy, see the class docstring)

        return getattr(sympy, name)


sy = _Sympy()


@lru_cache(maxsize=1)
def circulant_eigenvalue() -> tuple[sy.Expr, tuple[sy.Symbol, ...]]:
    """sympy: eigenvalue ``lambda_k`` of the circulant with weights a (self) and b (at +-1)."""
    a, b, k, n = sy.symbols("a b k n", positive=True)
    omega = sy.exp(2 * sy.pi * sy.I * k / n)
    lam = sy.expand((a + b * omega + b / omega).rewrite(sy.cos))  # DFT of offsets 0, +1, -1
    return lam, (a, b, k, n)


def _is_zero(expr: sy.Expr) -> bool:
    """sympy proof that a trigonometric identity holds: expand in exponentials."""
    return sy.expand(sy.expand_trig(expr).rewrite(sy.exp)) == 0


@lru_cache(maxsize=1)
def _ring_forms() -> dict[str, Any]:
    lam, (a, b, k, n) = circulant_eigenvalue()
    lam = lam.subs({a: sy.Rational(1, 3), b: sy.Rational(1, 3)})
    gap2 = sy.Rational(4, 3) * sy.sin(sy.pi / n) ** 2  # 1 - lambda_1
    theta = sy.Symbol("theta")
    gapn = sy.Rational(2, 3) + sy.Rational(4, 3) * sy.cos(theta / 2) ** 2  # 1 + lambda(theta)
    # sympy proves the cancellation-free rewrites equal the DFT eigenvalues.
    assert _is_zero(1 - lam.subs(k, 1) - gap2)
    lam_theta = lam.subs(2 * sy.pi * k / n, theta).subs(k, theta * n / (2 * sy.pi))
    assert _is_zero(1 + lam_theta - gapn)
    return {
        "lambda": sy.lambdify((k, n), lam, "numpy"),
        "gap2": sy.lambdify(n, gap2, "numpy"),
        "gapn": sy.lambdify(theta, gapn, "numpy"),
    }


def ring_spectrum(n: int) -> np.ndarray:
    """Eigenvalues ``1/3 + (2/3) cos(2 pi k / n)``, k = 0..n-1, of the ring with weights 1/3."""
    n = check_int("n", n, minimum=3)
    return np.asarray(_ring_forms()["lambda"](np.arange(n), n), dtype=np.float64)


def ring_gap(n: int) -> tuple[float, float]:
    """``(rho, 1 - rho)`` of the ring with weights 1/3 (000 Sec. 6.2, 004 Sec. 6), n >= 3.

    ``1 - lambda_1 = (4/3) sin^2(pi/n)`` and ``1 + lambda_min = 2/3 + (4/3) cos^2(pi floor(n/2)
    / n)``; rho is 1 minus the smaller of the two.
    """
    n = check_int("n", n, minimum=3)
    f = _ring_forms()
    g2 = float(f["gap2"](n))
    gn = float(f["gapn"](2 * math.pi * (n // 2) / n))
    g = min(g2, gn)
    return 1.0 - g, g


@lru_cache(maxsize=1)
def _torus_forms() -> dict[str, Any]:
    lam, (a, b, k, n) = circulant_eigenvalue()
    cyc = lam.subs({a: 0, b: 1})  # eigenvalues 2 cos(2 pi k / n) of the cycle's adjacency
    k1, k2, r, c = sy.symbols("k1 k2 r c", positive=True)
    lam2 = (1 + cyc.subs({k: k1, n: r}) + cyc.subs({k: k2, n: c})) / 5  # Kronecker sum, w = 1/5
    m = sy.Symbol("m", positive=True)
    gap2 = sy.Rational(4, 5) * sy.sin(sy.pi / m) ** 2
    assert _is_zero(1 - lam2.subs({k1: 0, k2: 1, c: m}) - gap2)
    ta, tb = sy.symbols("theta_a theta_b")
    gapn = sy.Rational(2, 5) + sy.Rational(4, 5) * (sy.cos(ta / 2) ** 2 + sy.cos(tb / 2) ** 2)
    lam_t = (1 + 2 * sy.cos(ta) + 2 * sy.cos(tb)) / 5
    assert _is_zero(1 + lam_t - gapn)
    return {
        "lambda": sy.lambdify((k1, k2, r, c), lam2, "numpy"),
        "gap2": sy.lambdify(m, gap2, "numpy"),
        "gapn": sy.lambdify((ta, tb), gapn, "numpy"),
    }


def torus_spectrum(rows: int, cols: int) -> np.ndarray:
    """Eigenvalues of the rows x cols torus with weights 1/5 (rows, cols >= 3)."""
    rows = check_int("rows", rows, minimum=3)
    cols = check_int("cols", cols, minimum=3)
    a, b = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return np.asarray(_torus_forms()["lambda"](a, b, rows, cols), dtype=np.float64).ravel()


def torus_gap(rows: int, cols: int) -> tuple[float, float]:
    """``(rho, 1 - rho)`` of the rows x cols torus with weights 1/5 (rows, cols >= 3)."""
    rows = check_int("rows", rows, minimum=3)
    cols = check_int("cols", cols, minimum=3)
    f = _torus_forms()
    g2 = float(f["gap2"](max(rows, cols)))
    gn = float(f["gapn"](2 * math.pi * (rows // 2) / rows, 2 * math.pi * (cols // 2) / cols))
    g = min(g2, gn)
    return 1.0 - g, g


@lru_cache(maxsize=1)
def _hypercube_forms() -> dict[str, Any]:
    d, j = sy.symbols("d j", positive=True, integer=True)
    # Q_d = K_2 [] ... [] K_2: adjacency eigenvalues are sums of d signs, d - 2j, j = 0..d.
    lam = (1 + d - 2 * j) / (d + 1)
    rho = sy.Max(lam.subs(j, 1), -lam.subs(j, d))
    gap = sy.simplify(1 - lam.subs(j, 1))
    assert sy.simplify(gap - 2 / (d + 1)) == 0
    assert sy.simplify(lam.subs(j, 1) + lam.subs(j, d)) == 0  # lambda_2 = -lambda_min
    return {
        "lambda": sy.lambdify((j, d), lam, "numpy"),
        "rho": sy.lambdify(d, rho, "numpy"),
        "gap": sy.lambdify(d, gap, "numpy"),
    }


def hypercube_gap(n: int) -> tuple[float, float]:
    """``(rho, 1 - rho) = ((d-1)/(d+1), 2/(d+1))`` for Q_d, n = 2^d, weights 1/(d+1)."""
    n = check_int("n", n, minimum=2)
    d = n.bit_length() - 1
    if 1 << d != n:
        raise AssumptionError(f"a hypercube needs n to be a power of 2, got n = {n}")
    f = _hypercube_forms()
    if d == 1:
        return 0.0, 1.0
    return float(f["rho"](d)), float(f["gap"](d))


def complete_gap(n: int) -> tuple[float, float]:
    """``(0, 1)``: the balanced complete graph has ``W = 11^T/n`` (000 Sec. 6.2: rho = 0)."""
    check_int("n", n, minimum=2)
    return 0.0, 1.0


def exponential_gap(n: int) -> tuple[float, float]:
    """Static exponential graph, n a power of 2: ``rho = 1 - 2/(1 + log2 n)`` (Ying et al. 2021,
    Prop. 1), so ``1 - rho = 2 / (1 + log2 n)``."""
    n = check_int("n", n, minimum=2)
    tau = n.bit_length() - 1
    if 1 << tau != n:
        raise AssumptionError(f"the closed form needs n to be a power of 2, got n = {n}")
    return 1.0 - 2.0 / (1.0 + tau), 2.0 / (1.0 + tau)


def closed_form(topology: str, n: int, **params: Any) -> tuple[float, float] | None:
    """``(rho, 1 - rho)`` in closed form for the topology's default weights, or None."""
    t = topology.lower()
    if t == "ring" and n >= 3:
        return ring_gap(n)
    if t == "complete":
        return complete_gap(n)
    if t == "hypercube":
        return hypercube_gap(n)
    if t == "exponential" and n >= 2 and (n & (n - 1)) == 0:
        return exponential_gap(n)
    if t == "torus":
        r, c = torus_shape(n, params.get("rows"), params.get("cols"))
        if min(r, c) >= 3:
            return torus_gap(r, c)
    return None


def ring_effective_neighbors(n: int, gamma: float) -> float:
    """Effective number of neighbours (Vogels et al. 2022) of the ring with weights 1/3, from its
    closed-form spectrum: ``1 / ((1 - gamma) mean_k lambda_k^2 / (1 - gamma lambda_k^2))``."""
    lam = ring_spectrum(n)
    return float(1.0 / ((1.0 - gamma) * np.mean(lam**2 / (1.0 - gamma * lam**2))))
