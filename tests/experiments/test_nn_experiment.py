"""Training with the simulator's algorithms: the accuracy loop mirrors the runner bit for bit,
run_n1 reports what is registered, the CLI writes JSON and a figure."""

import json

import numpy as np
import pytest

from fedtheory.algorithms.registry import display_name, make_algorithm
from fedtheory.cli import main
from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.experiments.n1 import N1_ALGORITHMS, run_n1
from fedtheory.experiments.nn_training import train
from fedtheory.problems.nn.data import federated_synthetic
from fedtheory.problems.nn.problem import MLPProblem
from fedtheory.simulation import simulate

SMALL = dict(
    n_clients=10,
    participation=0.5,
    num_samples=400,
    rounds=3,
    local_steps=2,
    batch_size=8,
    hidden=(8,),
    seeds=2,
    eval_every=2,
)


@pytest.fixture(scope="module")
def prob():
    return MLPProblem(federated_synthetic(1.0, 1.0, 6, samples=40), hidden=(8,), batch_size=5)


def test_train_reproduces_the_runner_bit_for_bit(prob):
    """Same algorithm, participation, seeds and x0: train's final server models are the
    runner's, so the accuracy curve belongs to exactly the simulator's trajectory."""
    x0 = prob.init(np.random.default_rng(0))
    kw = dict(rounds=4, seeds=3, seed=5, x0=x0, lr=0.1, local_steps=3)
    res = train(prob, "fedavg", "uniform", participation_kw={"m": 2}, eval_every=2, **kw)
    sim = simulate(prob, "fedavg", "uniform", clients_per_round=2, **kw)
    np.testing.assert_array_equal(res.x_final, sim.x_final)
    assert res.rounds.tolist() == [0, 2, 4] and res.accuracy.shape == (3, 3)
    np.testing.assert_allclose(res.accuracy[:, -1], prob.accuracy(sim.x_final))
    np.testing.assert_allclose(res.train_loss[:, 0], prob.loss(x0) * np.ones(3))


def test_train_refuses_config_with_a_built_algorithm(prob):

    algo = make_algorithm("fedavg", problem=prob, lr=0.1)
    with pytest.raises(AssumptionError, match="need an algorithm name"):
        train(prob, algo, "full", rounds=1, lr=0.2)


def test_run_n1_small_is_deterministic_and_runs_every_algorithm():
    a = run_n1(**SMALL)
    b = run_n1(**SMALL)
    for name, res in a.results.items():
        np.testing.assert_array_equal(res.accuracy, b.results[name].accuracy)
        assert res.accuracy.shape == (2, 3)
        assert np.all((res.accuracy >= 0) & (res.accuracy <= 1))
    assert set(a.results) == {display_name(n) for n in N1_ALGORITHMS}
    s = a.summary()
    assert set(s) == set(a.results) and all(v["seeds"] == 2 for v in s.values())
    assert a.ordering()[0] in a.results
    # seeds start from different networks but every algorithm from the same ones
    accs0 = [r.accuracy[:, 0] for r in a.results.values()]
    for acc in accs0[1:]:
        np.testing.assert_array_equal(acc, accs0[0])


def test_run_n1_refusals():
    with pytest.raises(FedTheoryError, match="unknown algorithm 'FedSGD'"):
        run_n1(["FedSGD"], **SMALL)
    with pytest.raises(AssumptionError, match="unknown N1 algorithm"):
        run_n1(["scaffnew"], **SMALL)
    with pytest.raises(AssumptionError, match="gives 0 clients per round"):
        run_n1(["FedAvg"], **{**SMALL, "participation": 0.01})
    with pytest.raises(
        AssumptionError, match="5 must divide N = 10 and the clients per round M = 1"
    ):
        run_n1(["CAFGA"], **{**SMALL, "participation": 0.1})


def test_cli_nn_writes_json_and_figure(tmp_path, capsys):

    out = tmp_path / "n1.json"
    rc = main(
        [
            "nn",
            "--algorithms",
            "FedAvg",
            "--clients",
            "10",
            "--samples",
            "400",
            "--rounds",
            "2",
            "--local-steps",
            "2",
            "--batch-size",
            "8",
            "--hidden",
            "8",
            "--seeds",
            "2",
            "--eval-every",
            "1",
            "--json",
            str(out),
            "--plot",
            "--out",
            str(tmp_path),
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "ordering (best first): FedAvg" in text and "+-" in text
    d = json.loads(out.read_text())
    assert d["claim"] == "N1" and d["setting"]["n_clients"] == 10
    assert len(d["curves"]["FedAvg"]["accuracy_mean"]) == 3
    assert (tmp_path / "nn_n1.png").stat().st_size > 0 and (tmp_path / "nn_n1.pdf").exists()


def test_cli_nn_bad_override_is_one_line_error(capsys):

    assert main(["nn", "--lr", "FedAvg=fast", "--rounds", "1"]) == 2
    assert "is not a number" in capsys.readouterr().err


def test_run_n1_with_a_small_cnn():
    res = run_n1(["FedAvg"], conv=(2,), kernel=5, stride=3, **SMALL)
    assert res.setting["model"].startswith("Conv1DNet")
    assert res.results["FedAvg"].x_final.shape == (2, res.setting["params"])


def test_run_n1_on_a_user_file_and_refusal(tmp_path, capsys):
    rng = np.random.default_rng(0)
    path = tmp_path / "mine.npz"
    np.savez(path, x=rng.standard_normal((300, 6)), y=rng.integers(0, 3, 300))
    res = run_n1(["FedAvg"], data=path, **{**SMALL, "num_samples": 0})
    assert res.setting["data"] == str(path) and res.results["FedAvg"].accuracy.shape == (2, 3)
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=rng.standard_normal((120, 6)), y=np.full(120, -1))

    assert main(["nn", "--data", str(bad), "--rounds", "1", "--clients", "10"]) == 2
    assert "y[0] = -1 is outside" in capsys.readouterr().err
