"""Participation models: draw format, reproducibility, aggregation weights, validation."""

import warnings
from itertools import permutations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtheory.cli import build_parser
from fedtheory.errors import AssumptionError
from fedtheory.participation import (
    Bernoulli,
    Cyclic,
    Full,
    Markov,
    MemorylessChainWarning,
    PerCluster,
    Trace,
    Uniform,
    Weighted,
    make_participation,
    model_info,
    model_names,
)
from fedtheory.participation.exact import (
    bernoulli_law,
    leave_one_out_pmf,
    multinomial_law,
    poisson_binomial_pmf,
    weighted_without_replacement_law,
)

P16 = np.random.default_rng(7).random(16) + 0.01
P16 = P16 / P16.sum()


def all_models():
    return [
        Full(6),
        Uniform(6, 2),
        Weighted(P16, 4),
        Weighted(P16, 4, replace=True),
        Bernoulli(np.linspace(0.05, 0.6, 6), empty="redraw"),
        Bernoulli(np.linspace(0.05, 0.6, 6), empty="skip"),
        Markov(np.full(6, 0.2), np.full(6, 0.4)),
        Cyclic(6, 4),
        PerCluster([0, 0, 0, 1, 1, 1], 1),
        Trace(np.eye(6, dtype=bool), cycle=True),
    ]


@pytest.mark.parametrize("model", all_models(), ids=lambda m: type(m).__name__)
def test_draw_format_and_reproducibility(model):
    d = model.sample(30, seeds=4, seed=11)
    n = model.n_clients
    assert d.shape == (4, 30, n)
    assert d.dtype == (np.int64 if model.counts else bool)
    np.testing.assert_array_equal(d, model.sample(30, seeds=4, seed=11))
    w = model.weights(d, "mean")
    assert w.shape == d.shape and w.dtype == np.float64
    assert np.all(w[d == 0] == 0)
    tot = w.sum(-1)
    nonempty = (d > 0).any(-1)
    np.testing.assert_allclose(tot[nonempty], 1.0, rtol=0, atol=1e-12)
    assert np.all(tot[~nonempty] == 0)
    np.testing.assert_allclose(model.weights(d, "weighted").sum(-1)[nonempty], 1.0, atol=1e-12)


@pytest.mark.parametrize("model", all_models(), ids=lambda m: type(m).__name__)
def test_a_batch_of_seeds_draws_what_each_seed_draws_alone(model):
    """``sample_each`` (the runner's batched draws, one stream per seed, one selection for the
    batch where the model allows) gives every seed the bits of its own ``sample`` call."""
    seqs = np.random.SeedSequence(5).spawn(7)
    batch = model.sample_each(40, seqs)
    alone = np.stack([model.sample(40, 1, seed=s)[0] for s in seqs])
    assert batch.dtype == alone.dtype and batch.shape == (7, 40, model.n_clients)
    np.testing.assert_array_equal(batch, alone)
    assert not np.array_equal(batch[0], batch[1]) or isinstance(model, (Full, Trace, Cyclic))


@pytest.mark.parametrize(
    "model",
    [Uniform(10, 3), Weighted(P16, 4), Bernoulli(np.full(8, 0.2)), Markov([0.3] * 5, [0.2] * 5)],
    ids=lambda m: type(m).__name__,
)
def test_different_seeds_differ(model):
    assert not np.array_equal(model.sample(50, seed=1), model.sample(50, seed=2))


def test_sizes_per_round():
    assert np.all(Uniform(9, 4).sample(40, seeds=3).sum(-1) == 4)
    assert np.all(Weighted(P16, 5).sample(40, seeds=3).sum(-1) == 5)
    assert np.all(Weighted(P16, 5, replace=True).sample(40, seeds=3).sum(-1) == 5)
    assert np.all(Bernoulli(np.full(5, 0.05)).sample(200, seeds=3).any(-1))
    assert not np.all(Bernoulli(np.full(5, 0.05), empty="skip").sample(200, seeds=3).any(-1))
    d = PerCluster([0, 0, 0, 1, 1, 1, 1], [2, 3]).sample(40, seeds=2)
    assert np.all(d[..., :3].sum(-1) == 2) and np.all(d[..., 3:].sum(-1) == 3)


def test_weighted_exact_matches_numpy_choice():
    model = Weighted(P16, 4)
    pi = model.inclusion_probabilities()
    assert pi.method == "exact dynamic program"
    np.testing.assert_allclose(pi.value.sum(), 4.0, atol=1e-12)
    rng = np.random.default_rng(3)
    reps = 6000
    idx = np.stack([rng.choice(16, 4, replace=False, p=P16) for _ in range(reps)])
    freq = np.bincount(idx.ravel(), minlength=16) / reps
    se = np.sqrt(pi.value * (1 - pi.value) / reps)
    assert np.all(np.abs(freq - pi.value) < 4 * se + 1e-12)


def test_factory_defaults():
    b = make_participation("bernoulli", 8, 2)
    np.testing.assert_allclose(b.p, 0.25)
    mk = make_participation("markov", 8, 2)
    np.testing.assert_allclose(mk.stationary(), 0.25)
    assert isinstance(make_participation("uniform", 8, 2), Uniform)
    with pytest.raises(AssumptionError, match="unknown participation model"):
        make_participation("sometimes", 8, 2)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Uniform(4, 5), "exceeds the number of clients"),
        (lambda: Uniform(4, 0), ">= 1"),
        (lambda: Weighted([0.5, 0.6], 1), "sum to 1"),
        (lambda: Weighted([1.2, -0.2], 1), r"outside \[0, 1\]"),
        (lambda: Bernoulli([0.5, 0.0, 0.2]), "client 1 never participates"),
        (lambda: Bernoulli([0.5, np.nan]), "non-finite"),
        (lambda: Bernoulli([0.5], empty="wait"), "empty-round policy"),
        (lambda: Trace(np.ones(5, dtype=bool)), "2-D"),
        (lambda: Trace(np.array([[1, 2], [0, 1]])), "boolean"),
        (lambda: Trace(np.array([[True, False], [True, False]])), "client 1 never participates"),
        (lambda: Markov([0.0, 0.5], [0.5, 0.5]), "never"),
    ],
)
def test_validation_errors(build, message):
    with pytest.raises(AssumptionError, match=message):
        build()


# --------------------------------------------------------------------------------------------
# exact laws against brute force


def prob_vectors(min_n=1, max_n=6, low=0.02):
    return st.integers(min_n, max_n).flatmap(
        lambda n: st.lists(st.floats(low, 1.0), min_size=n, max_size=n).map(np.array)
    )


def brute_weighted_wor(p, m):
    """Sum over every ordered sequence of m distinct clients of prod p_j / (1 - drawn mass)."""
    law = {}
    for seq in permutations(range(p.size), m):
        pr, used = 1.0, 0.0
        for j in seq:
            pr *= p[j] / (1.0 - used)
            used += p[j]
        key = frozenset(seq)
        law[key] = law.get(key, 0.0) + pr
    return law


@given(prob_vectors(2, 6), st.data())
def test_weighted_dp_equals_brute_force(w, data):
    p = w / w.sum()
    m = data.draw(st.integers(1, p.size))
    masks, probs = weighted_without_replacement_law(p, m)
    brute = brute_weighted_wor(p, m)
    assert len(brute) == masks.shape[0]
    for mask, pr in zip(masks, probs, strict=True):
        assert abs(brute[frozenset(np.flatnonzero(mask).tolist())] - pr) < 1e-12


@given(prob_vectors(1, 8))
def test_poisson_binomial_and_leave_one_out_equal_enumeration(p):
    p = np.minimum(p, 1.0)
    masks, probs = bernoulli_law(p)
    size = masks.sum(1)
    np.testing.assert_allclose(
        poisson_binomial_pmf(p), np.bincount(size, weights=probs, minlength=p.size + 1), atol=1e-13
    )
    loo = leave_one_out_pmf(p)
    for i in range(p.size):
        rest = size - masks[:, i]
        want = np.bincount(rest, weights=probs, minlength=p.size + 1)[: p.size]
        np.testing.assert_allclose(loo[i], want, atol=1e-12)


@given(
    prob_vectors(1, 8),
    st.sampled_from(["redraw", "skip"]),
    st.sampled_from(("mean", "weighted", "unbiased")),
)
def test_bernoulli_exact_weights_equal_enumeration(p, empty, rule):
    model = Bernoulli(np.minimum(p, 1.0), empty=empty)
    masks, probs = bernoulli_law(model.p)
    ne = masks.any(1)
    w = model.weights(masks, rule)
    want = probs[ne] @ w[ne] / probs[ne].sum()
    got = model.effective_weights(rule)
    assert got.exact
    np.testing.assert_allclose(got.value, want, atol=1e-12)
    pi_want = probs @ masks if empty == "skip" else probs[ne] @ masks[ne] / probs[ne].sum()
    np.testing.assert_allclose(model.inclusion_probabilities().value, pi_want, atol=1e-12)
    np.testing.assert_allclose(
        model.empty_probability(), 0 if empty == "redraw" else probs[~ne].sum(), atol=1e-14
    )


@given(prob_vectors(1, 5), st.integers(1, 4))
def test_multinomial_law_matches_closed_forms(w, m):
    p = w / w.sum()
    model = Weighted(p, m, replace=True)
    counts, probs = multinomial_law(p, m)
    np.testing.assert_allclose(probs.sum(), 1.0, atol=1e-12)
    np.testing.assert_allclose(probs @ counts, m * p, atol=1e-12)
    np.testing.assert_allclose(
        model.inclusion_probabilities().value, probs @ (counts > 0), atol=1e-12
    )
    for rule in ("mean", "unbiased"):
        np.testing.assert_allclose(
            model.effective_weights(rule).value, probs @ model.weights(counts, rule), atol=1e-12
        )


def test_uniform_and_cluster_closed_forms_equal_enumeration():
    for model in (Uniform(7, 3), PerCluster([0, 0, 1, 1, 1, 2], [1, 2, 1])):
        masks, probs, method = model.support()
        assert method == "exact enumeration"
        np.testing.assert_allclose(model.inclusion_probabilities().value, probs @ masks, atol=1e-13)
        for rule in ("mean", "weighted", "unbiased"):
            np.testing.assert_allclose(
                model.effective_weights(rule).value,
                probs @ model.weights(masks, rule),
                atol=1e-13,
            )


# --------------------------------------------------------------------------------------------
# P4: weighted sampling without replacement, exact against Monte Carlo
def test_p4_weighted_exact_vs_monte_carlo():
    model = Weighted(P16, 4)
    rounds = 40_000
    d = model.sample(rounds, seed=123)[0]
    pi = model.inclusion_probabilities().value
    se = np.sqrt(pi * (1 - pi) / rounds)
    assert np.all(np.abs(d.mean(0) - pi) < 4 * se)
    q = model.effective_weights("weighted").value
    w = model.weights(d, "weighted")
    se_w = w.std(0, ddof=1) / np.sqrt(rounds)
    assert np.all(np.abs(w.mean(0) - q) < 4 * se_w + 1e-15)
    # the exact answer is not the naive M p_i (003: no simple closed form): 0.0255 off here
    assert np.abs(pi - 4 * P16).max() > 0.02


def test_weighted_large_n_falls_back_to_monte_carlo():
    p = np.random.default_rng(2).random(24) + 0.05
    model = Weighted(p / p.sum(), 3)
    est = model.inclusion_probabilities()
    assert est.method == "monte carlo" and est.samples > 0
    assert np.all(est.stderr > 0)
    np.testing.assert_allclose(est.value.sum(), 3.0, atol=1e-12)
    # successive sampling: inclusion is monotone in p
    order = np.argsort(model.p)
    assert np.corrcoef(model.p[order], est.value[order])[0, 1] > 0.95
    # 1 / (N pi_hat) with a Monte Carlo pi_hat: unbiased only up to the error of pi_hat
    unb = model.effective_weights("unbiased")
    assert unb.method == "monte carlo"
    np.testing.assert_allclose(unb.value, 1 / 24, rtol=0.05)


def test_weighted_replace_draws_are_multinomial():
    model = Weighted(P16, 6, replace=True)
    d = model.sample(20_000, seed=9)[0]
    se = np.sqrt(6 * P16 * (1 - P16) / 20_000)
    assert np.all(np.abs(d.mean(0) - 6 * P16) < 4 * se)
    w = model.weights(d, "unbiased")
    np.testing.assert_allclose(w, d / (16 * 6 * P16))


# --------------------------------------------------------------------------------------------
# Bernoulli, Markov, Cyclic, Trace
def test_bernoulli_redraw_frequencies():
    p = np.array([0.05, 0.1, 0.02, 0.3])
    model = Bernoulli(p, empty="redraw")
    d = model.sample(20_000, seed=4)[0]
    assert d.any(1).all()
    pi = model.inclusion_probabilities().value
    np.testing.assert_allclose(pi, p / (1 - np.prod(1 - p)))
    se = np.sqrt(pi * (1 - pi) / d.shape[0])
    assert np.all(np.abs(d.mean(0) - pi) < 4 * se)


def test_markov_stationary_mixing_and_memoryless_warning():
    a, b = np.array([0.1, 0.4, 0.3]), np.array([0.2, 0.5, 0.0])
    with pytest.warns(MemorylessChainWarning, match="memoryless, i.e. plain Bernoulli"):
        Markov([0.3, 0.6], [0.7, 0.4])
    with pytest.warns(MemorylessChainWarning, match=r"1 of 2 clients \(1\)"):
        Markov([0.3, 0.6], [0.5, 0.4])

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = Markov(a, b)
    np.testing.assert_allclose(model.stationary(), a / (a + b))
    T = model.transition_matrices()
    np.testing.assert_allclose(T.sum(-1), 1.0)
    tmix = model.mixing_time(0.25)
    for i in range(3):
        pi = np.array([1 - model.stationary()[i], model.stationary()[i]])

        def dist(t, i=i, pi=pi):
            return 0.5 * np.abs(np.linalg.matrix_power(T[i], t) - pi).sum(1).max()

        t = int(tmix[i])
        assert dist(t) <= 0.25 + 1e-12 and (t == 1 or dist(t - 1) > 0.25)
    d = model.sample(400, seeds=100, seed=1)
    se = np.sqrt(model.stationary() * (1 - model.stationary()) / d[:, 0].size)
    assert np.all(np.abs(d[:, 0].mean(0) - model.stationary()) <= 4 * se)  # stationary start
    off = Markov(a, b, start="off").sample(1, seeds=5)
    assert not off.any()
    assert Markov([1.0], [1.0]).mixing_time()[0] == np.inf


def test_markov_rounds_are_correlated():
    model = Markov(np.full(4, 0.05), np.full(4, 0.05))  # persistent spells
    d = model.sample(2000, seeds=2, seed=3)
    stay = (d[:, 1:] == d[:, :-1]).mean()
    assert stay > 0.9  # 1 - a = 1 - b = 0.95 per step


def test_cyclic_round_robin_and_pattern():
    model = Cyclic(6, 4)
    assert model.period == 3
    d = model.sample(9, seeds=2)[0]
    assert np.all(d.sum(1) == 4)
    np.testing.assert_array_equal(d[:3], d[3:6])
    np.testing.assert_allclose(model.inclusion_probabilities().value, 4 / 6)
    pat = np.array([[1, 1, 0], [0, 0, 1]], dtype=bool)
    rnd = Cyclic(pattern=pat, phase="random").sample(5, seeds=50, seed=2)
    assert {tuple(r) for r in rnd[:, 0]} == {(True, True, False), (False, False, True)}


def test_trace_from_files(tmp_path):
    mask = np.array([[1, 0, 1], [0, 1, 1]], dtype=bool)
    np.save(tmp_path / "t.npy", mask)
    np.savetxt(tmp_path / "t.csv", mask.astype(int), delimiter=",", fmt="%d")
    for f in ("t.npy", "t.csv"):
        model = Trace.from_file(tmp_path / f, cycle=True)
        np.testing.assert_array_equal(model.sample(4, seeds=2)[1], np.vstack([mask, mask]))
    with pytest.raises(AssumptionError, match="2 rounds, 3 were asked"):
        Trace(mask).sample(3)
    np.testing.assert_allclose(Trace(mask).inclusion_probabilities().value, [0.5, 0.5, 1.0])


def test_generator_continues_the_stream():
    g = np.random.default_rng(5)
    model = Uniform(12, 3)
    first, second = model.sample(20, seed=g), model.sample(20, seed=g)
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(first, model.sample(20, seed=5))


def test_weights_reject_wrong_width_and_rule():
    model = Uniform(5, 2)
    with pytest.raises(AssumptionError, match="5 entries"):
        model.weights(np.ones((3, 4), dtype=bool))
    with pytest.raises(AssumptionError, match="unknown aggregation rule"):
        model.weights(model.sample(2), "median")


def test_bernoulli_redraw_law_equals_conditional_enumeration():
    """The one-shot conditional redraw reproduces P(S = T | S != empty) for every T."""
    model = Bernoulli(np.array([0.01, 0.02, 0.005, 0.03]))  # P(empty) = 0.936
    d = model.sample(100_000, seed=1)[0]
    masks, probs, _ = model.support()
    idx = d @ (1 << np.arange(4))
    freq = np.bincount(idx, minlength=16) / d.shape[0]
    se = np.sqrt(probs * (1 - probs) / d.shape[0])
    assert freq[0] == 0 and probs[0] == 0
    assert np.all(np.abs(freq - probs)[1:] < 4.5 * se[1:])


def test_every_command_lists_the_registered_models():
    """One list of participation models: the registry's. The CLI's choices are its views."""

    def choices(command: str, dest: str) -> list[str]:
        sub = build_parser(command)._subparsers._group_actions[0].choices[command]
        return next(a.choices for a in sub._actions if a.dest == dest)

    assert list(choices("participation", "model")) == model_names()
    assert list(choices("simulate", "participation")) == model_names(settings_only=True)
    assert list(choices("rate", "participation")) == model_names(exact_law=True)
    assert "trace" not in model_names(settings_only=True)
    for name in model_names():
        assert model_info(name).description
        assert model_info(name.upper()).name == name
    with pytest.raises(AssumptionError, match="choose one of full, uniform"):
        model_info("uniformm")
