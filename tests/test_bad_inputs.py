"""Every bad input to the Python API is a typed error naming the argument and the assumption.

The kinds of bad input checked: non-real dtypes, non-finite tolerances, negative
seeds, files of the wrong format, sizes beyond memory, unknown keywords, problems without a
unique minimizer, and divergence reported in one line.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from fedtheory.errors import AssumptionError, FedTheoryError, UnknownOptionError
from fedtheory.graphs import check_mixing_matrix, check_stochastic, mixing_matrix, spectral_gap
from fedtheory.graphs.closedforms import closed_form
from fedtheory.graphs.conditions import PAPER_SETTINGS, evaluate_setting
from fedtheory.graphs.families import clustered
from fedtheory.graphs.spectral import topology_gap
from fedtheory.graphs.topologies import from_edges, load_edges
from fedtheory.graphs.validate import as_matrix, stochasticity_report
from fedtheory.graphs.weights import random_weights
from fedtheory.io import dumps
from fedtheory.participation import Trace, load_vector, make_participation
from fedtheory.problems import (
    LeastSquaresProblem,
    ProblemFile,
    QuadraticProblem,
    random_least_squares,
    random_quadratic,
)
from fedtheory.simulation import simulate
from fedtheory.validation import (
    available_memory,
    check_finite,
    check_int,
    check_memory,
    check_positive,
    check_probabilities,
    check_seed,
)

RING = mixing_matrix("ring", 6)


# --- dtypes --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("bad", "dtype"),
    [
        (RING + 0j, "complex"),
        (RING.astype(str), "string"),
        (RING.astype(object), "object"),
        (sp.csr_array(RING.astype(complex)), "complex"),
    ],
)
def test_non_real_matrices_are_refused_naming_the_dtype(bad, dtype):
    for call in (as_matrix, check_mixing_matrix, spectral_gap, stochasticity_report):
        with pytest.raises(AssumptionError, match=f"W must be a real numeric array, got {dtype}"):
            call(bad)
    with pytest.raises(AssumptionError, match=dtype):
        check_stochastic(bad, "doubly")


def test_a_complex_matrix_is_not_analysed_without_its_imaginary_part():
    """Before: W + 0.3j I was analysed as W (the imaginary part dropped with a warning)."""
    with pytest.raises(AssumptionError, match="imaginary part would be dropped"):
        spectral_gap(RING + 0.3j * np.eye(6))


def test_ragged_and_text_vectors_are_refused():
    with pytest.raises(AssumptionError, match="rectangular"):
        check_finite("p", [[1.0, 2.0], [3.0]])
    with pytest.raises(AssumptionError, match="string"):
        check_probabilities("p", ["0.5", "0.5"])
    with pytest.raises(AssumptionError, match="complex"):
        check_probabilities("p", [0.5 + 0j, 0.5])
    with pytest.raises(AssumptionError, match="complex"):
        make_participation("weighted", 2, 1, p=np.array([0.5, 0.5], dtype=complex))
    with pytest.raises(AssumptionError, match="object"):
        make_participation("bernoulli", 2, p=np.array([0.5, None], dtype=object))


def test_problem_arrays_must_be_real():
    H = np.broadcast_to(np.eye(2), (3, 2, 2))
    with pytest.raises(AssumptionError, match="H must be a real numeric array, got complex"):
        QuadraticProblem(H * (1 + 1j), np.ones((3, 2)))
    with pytest.raises(AssumptionError, match="A must be a real numeric array, got string"):
        LeastSquaresProblem(np.ones((2, 3, 2)).astype(str), np.ones((2, 3)))
    with pytest.raises(AssumptionError, match="the edge list must be a real numeric array"):
        from_edges([[0, 1 + 1j]])


# --- numbers ---------------------------------------------------------------------------------
@pytest.mark.parametrize("atol", [float("nan"), float("inf"), -1e-3])
def test_non_finite_or_negative_tolerances_are_refused(atol):
    rows_sum_to_1_2 = np.full((2, 2), 0.6)
    for call in (
        lambda: check_mixing_matrix(rows_sum_to_1_2, atol=atol),
        lambda: spectral_gap(RING, atol=atol),
        lambda: check_stochastic(RING, "row", atol=atol),
        lambda: stochasticity_report(RING, atol=atol),
        lambda: check_probabilities("p", [0.5, 0.5], sums_to_one=True, atol=atol),
    ):
        with pytest.raises(AssumptionError, match="the tolerance atol must be finite and >= 0"):
            call()
    with pytest.raises(AssumptionError, match="tol must be finite"):
        spectral_gap(RING, tol=atol)


def test_nan_tolerance_no_longer_accepts_rows_summing_to_1_2():
    """Before: --atol nan made every comparison pass, so W with rows summing to 1.2 passed."""
    with pytest.raises(AssumptionError):
        check_mixing_matrix(np.full((2, 2), 0.6), atol=float("nan"))
    with pytest.raises(AssumptionError, match="row 0 sums to 1.2"):
        check_mixing_matrix(np.full((2, 2), 0.6))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "3", None, 2.5, True, 1e400])
def test_counts_must_be_integers(value):
    with pytest.raises(AssumptionError, match="rounds must be an integer"):
        check_int("rounds", value)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 0.0, -1.0, "0.1", 1j])
def test_step_sizes_must_be_finite_and_positive(value):
    with pytest.raises(AssumptionError, match="lr must be"):
        check_positive("lr", value)


# --- seeds ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call",
    [
        lambda: mixing_matrix("erdos-renyi", 10, seed=-1),
        lambda: mixing_matrix("random-geometric", 10, seed=-3),
        lambda: mixing_matrix("complete-random", 5, seed=-1),
        lambda: clustered(2, 4, "ring", seed=-1),
        lambda: random_weights(sp.csr_array(np.ones((3, 3)) - np.eye(3)), seed=-1),
        lambda: spectral_gap(RING, seed=-1),
        lambda: evaluate_setting(PAPER_SETTINGS[0], ("ring",), seed=-1),
        lambda: make_participation("uniform", 5, 2).sample(3, seed=-1),
        lambda: random_quadratic(3, 2, seed=-1),
        lambda: random_least_squares(3, 4, 2, seed=-1),
        lambda: simulate(random_quadratic(3, 2), "fedavg", rounds=2, seed=-1, lr=0.1),
        lambda: simulate(random_quadratic(3, 2), "fedavg", rounds=2, seed_ids=[-1], lr=0.1),
    ],
    ids=[
        "erdos-renyi",
        "rgg",
        "complete-random",
        "clustered",
        "random-weights",
        "spectral-gap",
        "settings-table",
        "participation-sample",
        "random-quadratic",
        "random-least-squares",
        "simulate-seed",
        "simulate-seed-ids",
    ],
)
def test_negative_seeds_are_refused_naming_the_seed(call):
    with pytest.raises(AssumptionError, match=r"seed.* must be (an integer )?>= 0"):
        call()


def test_check_seed_accepts_what_numpy_accepts():
    rng = np.random.default_rng(0)
    for ok in (None, 0, 7, np.int64(3), 2.0, rng, np.random.SeedSequence(1), [1, 2]):
        assert check_seed(ok) is ok or check_seed(ok) == ok
    for bad in (-1, "1", 1.5, [1, -2], True):
        with pytest.raises(AssumptionError):
            check_seed(bad)


# --- files -----------------------------------------------------------------------------------
def test_load_vector_names_the_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as exc:
        load_vector("p.npy")
    assert exc.value.filename == "p.npy"  # the CLI says "no such file: p.npy", never "None"
    (tmp_path / "p.txt").write_text("0.5 zero point five\n")
    with pytest.raises(FedTheoryError, match="cannot read a vector of probabilities from p.txt"):
        load_vector("p.txt")
    np.save("c.npy", np.array([0.5 + 1j, 0.5]))
    with pytest.raises(AssumptionError, match=r"probabilities \(c.npy\) must be a real .*complex"):
        load_vector("c.npy")
    (tmp_path / "nan.txt").write_text("0.5 nan\n")
    with pytest.raises(AssumptionError, match=r"nan.txt\) has a non-finite entry nan at index"):
        load_vector("nan.txt")
    with pytest.raises(FedTheoryError, match="p.txt"):
        make_participation("bernoulli", 2, p="p.txt")


def test_trace_files_are_checked_like_every_other_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as exc:
        Trace.from_file("trace.csv")
    assert exc.value.filename == "trace.csv"
    (tmp_path / "trace.csv").write_text("1,0\nyes,no\n")
    with pytest.raises(FedTheoryError, match="trace.csv"):
        Trace.from_file("trace.csv")
    (tmp_path / "trace.csv").write_text("1,0\n0,2\n")
    with pytest.raises(AssumptionError, match=r"trace.csv must be boolean \(or 0/1\)"):
        Trace.from_file("trace.csv")
    (tmp_path / "trace.csv").write_text("1,0\n0,1\n")
    assert Trace.from_file("trace.csv").n_clients == 2


def test_problem_files_of_the_wrong_format_are_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save("p.npy", np.ones((2, 3, 2)))
    (tmp_path / "p.txt").write_text("1 2 3\n")
    (tmp_path / "empty.npz").write_bytes(b"")
    (tmp_path / "broken.npz").write_bytes(b"PK\x03\x04 broken")
    np.savez("noB.npz", A=np.ones((2, 3, 2)))
    for name, why in [
        ("p.npy", "p.npy is a single .npy array"),
        ("p.txt", "p.txt is not a zip archive"),
        ("empty.npz", "empty.npz is empty"),
        ("broken.npz", "broken.npz is not a readable .npz archive"),
        ("noB.npz", "noB.npz has no array 'b'"),
    ]:
        with pytest.raises(FedTheoryError, match=why):
            ProblemFile(name)
    with pytest.raises(FileNotFoundError) as exc:
        ProblemFile("none.npz")
    assert exc.value.filename == "none.npz"


def test_edge_list_files_name_their_path(tmp_path):
    (tmp_path / "e.txt").write_bytes(bytes(range(128, 256)))
    with pytest.raises(FedTheoryError, match="e.txt: not an edge list"):
        load_edges(tmp_path / "e.txt")
    with pytest.raises(FileNotFoundError):
        load_edges(tmp_path / "none.txt")


# --- a unique minimizer ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("A", "why"),
    [
        (np.random.default_rng(0).standard_normal((2, 1, 5)), "only 2 rows for d = 5"),
        (np.repeat(np.random.default_rng(1).standard_normal((3, 4, 1)), 2, axis=2), "collinear"),
    ],
    ids=["under-determined", "singular"],
)
def test_a_problem_file_without_a_unique_minimizer_is_refused(tmp_path, A, why):
    """Before: all-NaN error curves and exit 0."""
    path = tmp_path / "p.npz"
    np.savez(path, A=A, b=np.ones(A.shape[:2]))
    with pytest.raises(AssumptionError, match=f"x\\* is not unique \\({why}.*add a ridge"):
        ProblemFile(path)
    np.savez(path, A=A, b=np.ones(A.shape[:2]), lam=0.1)  # ridge: x* unique again
    assert ProblemFile(path).x_star is not None


def test_the_runner_refuses_a_relative_error_without_a_minimizer():
    A = np.random.default_rng(0).standard_normal((2, 1, 5))
    prob = LeastSquaresProblem(A, np.ones((2, 1)))
    assert prob.x_star is None
    with pytest.raises(AssumptionError, match="'error' needs the minimizer x\\*"):
        simulate(prob, "fedavg", rounds=2, lr=0.1, metrics=["error"])
    with pytest.raises(AssumptionError, match="'f_minus_f_star' needs f\\*"):
        simulate(prob, "fedavg", rounds=2, lr=0.1, metrics=["f_minus_f_star"])
    res = simulate(prob, "fedavg", rounds=2, lr=0.1, metrics=["grad_norm2"])
    assert np.isfinite(res.grad_norm2).all()


# --- memory --------------------------------------------------------------------------------------
@pytest.fixture
def small_memory(monkeypatch):
    """Pretend the machine has 100 MB, so that the refusals are tested without 100 GB."""
    monkeypatch.setenv("FEDTHEORY_MEMORY_LIMIT", str(100 * 2**20))


def test_available_memory_is_positive_and_capped(small_memory):
    assert available_memory() == 100 * 2**20
    with pytest.raises(AssumptionError, match="needs about 1.0 GiB, more than the 100.0 MiB"):
        check_memory("a thing", 2**30)


def test_dense_requests_beyond_memory_are_refused_with_the_estimate(small_memory):
    with pytest.raises(AssumptionError, match=r"complete mixing matrix on 100000 nodes .*needs"):
        mixing_matrix("complete", 100_000)
    with pytest.raises(AssumptionError, match=r"dense spectral gap of a 5000 x 5000 .*needs"):
        spectral_gap(mixing_matrix("ring", 5000), method="dense")
    with pytest.raises(AssumptionError, match=r"10 clusters of 4000 nodes .*needs"):
        clustered(10, 4000, "complete")
    with pytest.raises(AssumptionError, match=r"participation draws .*needs"):
        make_participation("uniform", 1000, 10).sample(10**6, seeds=10)
    with pytest.raises(AssumptionError, match=r"a run of 1000 seeds x 1000000 rounds .*needs"):
        simulate(random_quadratic(4, 3), "fedavg", rounds=10**6, seeds=1000, lr=0.1)
    with pytest.raises(AssumptionError, match=r"graph on 10000000000 nodes .*needs"):
        from_edges([[0, 10**10 - 1]])


def test_a_complete_graph_of_100000_nodes_is_answered_in_closed_form(small_memory):
    """Before: 9.9 GB for 38 s, then a crash. The closed form needs no matrix."""
    g = topology_gap("complete", 100_000)
    assert g.rho_norm == 0.0 and g.one_minus_rho == 1.0 and "closed form" in g.method
    ring = topology_gap("ring", 10**8)
    assert ring.one_minus_rho == pytest.approx(closed_form("ring", 10**8)[1], rel=1e-15)
    assert 0 < ring.one_minus_rho < 1e-14  # (4/3) sin^2(pi / n): no cancellation
    with pytest.raises(AssumptionError, match="needs about"):  # no closed form: built, refused
        topology_gap("star", 10**8)


@pytest.mark.parametrize(
    ("topology", "n"),
    [("ring", 50), ("complete", 40), ("torus", 64), ("hypercube", 32), ("exponential", 64)],
)
def test_closed_form_answers_agree_with_the_matrix(topology, n):
    numeric = topology_gap(topology, n)
    closed = topology_gap(topology, n, method="closed-form")
    assert "closed form" in closed.method and "closed form" not in numeric.method
    assert closed.rho_norm == pytest.approx(numeric.rho_norm, abs=1e-12)
    assert closed.one_minus_rho == pytest.approx(numeric.one_minus_rho, rel=1e-9, abs=1e-12)
    assert closed.symmetric == numeric.symmetric


def test_topology_gap_uses_the_matrix_for_other_weights():
    g = topology_gap("ring", 20, weights="metropolis", method="auto")
    assert "closed form" not in g.method
    with pytest.raises(AssumptionError, match="no closed form"):
        topology_gap("ring", 20, weights="max-degree", lazy_weights=True, method="closed-form")
    with pytest.raises(AssumptionError, match="no closed form"):
        topology_gap("star", 20, method="closed-form")


# --- unknown keywords ------------------------------------------------------------------------
def test_a_misspelled_topology_parameter_lists_the_valid_ones():
    with pytest.raises(UnknownOptionError, match=r"'torus' does not read 'row' \(it reads rows"):
        mixing_matrix("torus", 16, row=4)
    with pytest.raises(TypeError, match="radius"):  # UnknownOptionError is a TypeError too
        mixing_matrix("ring", 16, radius=0.3)
    assert mixing_matrix("torus", 16, rows=4, cols=None).shape == (16, 16)


# --- divergence ------------------------------------------------------------------------------
def test_divergence_is_summarized_in_one_line_and_written_as_null():
    prob = random_quadratic(4, 3, seed=1)
    ok = simulate(prob, "fedavg", rounds=5, seeds=2, lr=0.05)
    assert ok.divergence_summary() is None
    bad = simulate(prob, "fedavg", rounds=60, seeds=3, lr=5.0, local_steps=3)
    first = int(bad.diverged_at.min())
    assert bad.diverged.all() and first > 0
    assert bad.divergence_summary() == f"3 of 3 seeds diverged (first at round {first})"
    one = simulate(prob, "fedavg", rounds=60, seeds=1, lr=5.0, local_steps=3)
    assert one.divergence_summary() == f"1 of 1 seed diverged (at round {one.diverged_at[0]})"
    d = json.loads(dumps({"error": bad.error}))
    assert d["error"][0][-1] is None  # null, never "nan"
    back = np.array(d["error"], dtype=float)
    assert back.dtype == np.float64 and np.isnan(back[:, -1]).all()
