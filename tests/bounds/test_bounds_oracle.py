"""The exact oracle's upper-triangle mean-square operator (the strategy its eigensolver applies)
against the plain one: the same sums in another order, equal to 1e-12 relative on every affine
algorithm, participation law and aggregation rule (channels merged or not, conserved quantities
or not)."""

from __future__ import annotations

import numpy as np
import pytest

from fedtheory.analysis.exact import AFFINE_ALGORITHMS, system
from fedtheory.analysis.exact.oracle import _system
from fedtheory.participation import make_participation
from fedtheory.problems import random_quadratic

MODELS = {
    "full": lambda n: make_participation("full", n),
    "uniform": lambda n: make_participation("uniform", n, 2),
    "bernoulli": lambda n: make_participation("bernoulli", n, 2),
    "weighted": lambda n: make_participation("weighted", n, 2, p=np.arange(1, n + 1) / 15),
}


@pytest.mark.parametrize("algorithm", AFFINE_ALGORITHMS)
@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("rule", ["mean", "unbiased"])
@pytest.mark.parametrize("l0", ["as chosen", "sparse"])
def test_upper_operator_equals_the_plain_one(algorithm, model, rule, l0, monkeypatch):
    if l0 == "sparse":  # the sparse server rows that large states (n >= 256) take, forced
        monkeypatch.setattr(system, "SPARSE_L0_MIN_N", 0)
        monkeypatch.setattr(system, "SPARSE_L0_DENSITY", 1.0)
    prob = random_quadratic(5, 3, seed=1, noise=0.1 if algorithm == "sg-focus" else 0.0)
    kw = {"prox_mu": 0.1} if algorithm in ("fedprox", "feddyn") else {}
    s = _system(prob, algorithm, MODELS[model](5), lr=0.05, local_steps=2, rule=rule, **kw).system
    assert isinstance(s._L0T, np.ndarray) == (l0 != "sparse")
    P = np.random.default_rng(0).standard_normal((s.n, s.n))
    P = P + P.T
    Z0, X0 = s._ms_parts(P)
    T0 = Z0 + X0.T
    assert np.abs(s.ms_full(P) - T0).max() <= 1e-12 * np.abs(T0).max()
    Z1, X1 = s._ms_upper(P)  # only the upper triangle of the quadratic term
    iu = np.triu_indices(s.n)
    assert np.abs((Z1 + X1.T)[iu] - T0[iu]).max() <= 1e-12 * np.abs(T0).max()
    # the packed operator the eigensolver applies, on the reduced coordinates
    Pr = np.random.default_rng(1).standard_normal((s.n_r, s.n_r))
    Pr = Pr + Pr.T
    Zp, Xp = s._ms_parts(s.embed_sym(Pr))
    ref = s.pack(s.restrict_sym(Zp + Xp.T))
    assert np.abs(s.ms_vech(s.pack(Pr)) - ref).max() <= 1e-12 * np.abs(ref).max()
    assert np.abs(s.embed_packed(s.pack(Pr)) - s.embed_sym(Pr)).max() <= 1e-12 * np.abs(Pr).max()
