"""The algorithm registry: declared settings, typed options, facts, and typos refused.

A misspelled keyword must never run a different experiment: every setting an algorithm does not
read is an error that lists the ones it does (scipy's ``_check_unknown_options`` does the same).
"""

from __future__ import annotations

import numpy as np
import pytest

from fedtheory.algorithms import (
    AlgorithmConfig,
    available,
    display_name,
    info,
    make_algorithm,
    names,
)
from fedtheory.algorithms.fedavg import server_model_layout
from fedtheory.algorithms.registry import register
from fedtheory.errors import AssumptionError, FedTheoryError, UnknownOptionError
from fedtheory.participation import make_participation
from fedtheory.problems import random_quadratic
from fedtheory.simulation import simulate


@pytest.fixture(scope="module")
def prob():
    return random_quadratic(6, 3, seed=0)


def test_unknown_option_is_a_type_error_listing_the_valid_ones():
    with pytest.raises(UnknownOptionError, match="fedau has no setting 'cutof'") as exc:
        make_algorithm("fedau", cutof=3)
    assert isinstance(exc.value, TypeError) and isinstance(exc.value, FedTheoryError)
    assert "cutoff" in str(exc.value) and "normalize" in str(exc.value)


def test_simulate_refuses_a_misspelled_keyword(prob):
    with pytest.raises(TypeError, match="focus has no setting 'learning_rate'.*accepts lr"):
        simulate(prob, "focus", rounds=1, learning_rate=0.5, local_steps=1)


def test_a_shared_setting_the_algorithm_ignores_is_refused(prob):
    """FOCUS uses one step size (003 Alg. 1): a server step size would silently do nothing."""
    with pytest.raises(UnknownOptionError, match="focus does not use global_lr"):
        make_algorithm("focus", lr=0.1, global_lr=0.5)
    with pytest.raises(UnknownOptionError, match="fedavg does not use topology"):
        simulate(prob, "fedavg", rounds=1, lr=0.1, topology="ring")
    # the default value, or None, is not a setting: callers may pass them uniformly
    make_algorithm("focus", lr=0.1, global_lr=1.0, topology=None)


def test_participation_arguments_need_a_participation_model(prob):
    with pytest.raises(AssumptionError, match="clients_per_round given with no participation"):
        simulate(prob, "fedavg", rounds=1, lr=0.1, clients_per_round=2)
    model = make_participation("uniform", 6, 2)
    with pytest.raises(AssumptionError, match="with a built model"):
        simulate(prob, "fedavg", model, rounds=1, lr=0.1, clients_per_round=2)


def test_make_participation_refuses_what_a_model_does_not_read():
    with pytest.raises(UnknownOptionError, match="full participation does not use clients"):
        make_participation("full", 6, 3)
    with pytest.raises(UnknownOptionError, match="uniform participation does not use 'replac'"):
        make_participation("uniform", 6, 2, replac=True)
    with pytest.raises(UnknownOptionError, match="probabilities p"):
        make_participation("uniform", 6, 2, p=np.full(6, 1 / 6))
    assert make_participation("weighted", 6, 2, p=np.full(6, 1 / 6), replace=True).n_clients == 6


def test_options_are_type_checked_with_their_declared_choices():
    with pytest.raises(AssumptionError, match="fedau option 'cutoff' must be int"):
        make_algorithm("fedau", cutoff=2.5)
    with pytest.raises(AssumptionError, match="must be finite and >= 1"):
        make_algorithm("fedau", cutoff=0)
    with pytest.raises(AssumptionError, match=r"must be one of \['clients', 'weights'\]"):
        make_algorithm("fedau", normalize="sum")
    with pytest.raises(AssumptionError, match="afga option 'resample' must be bool"):
        make_algorithm("afga", AlgorithmConfig(n_clients=4), resample="no")
    algo = make_algorithm("fedau", cutoff=3)
    assert algo.config.options == {"cutoff": 3, "normalize": "clients"}


def test_every_declared_option_is_filled_with_its_default():
    for name in available():
        entry = info(name)
        cfg = make_algorithm(name, AlgorithmConfig(n_clients=4)).config
        assert set(cfg.options) == {o.name for o in entry.options}, name
        for o in entry.options:
            assert np.all(cfg.option(o.name) == o.default) or o.default is None, name


def test_names_are_case_insensitive_and_display_names_resolve():
    assert info("FedAMSGrad").name == "fedamsgrad"
    assert info("HA-Fed").name == "hafed" and display_name("hafed") == "HA-Fed"
    assert make_algorithm("SCAFFOLD", lr=0.1).name == "scaffold"
    with pytest.raises(FedTheoryError, match="unknown algorithm 'fedsgd'"):
        info("fedsgd")


def test_facts_live_on_the_registered_algorithm():
    """000 Alg. 1-2 and 004 Alg. 1 gossip; CAFGA and HA-Fed are clustered; the adaptive server
    step is 000 eq. (2); affine rounds are the ones the exact oracles handle."""
    assert names(gossip=True) == ["afga", "afga-adapted", "cafga", "cafga-adapted", "dsgd", "hafed"]
    assert names(clustered=True) == ["cafga", "cafga-adapted", "hafed"]
    assert set(names(adaptive=True)) == {
        "afga",
        "afga-adapted",
        "cafga",
        "cafga-adapted",
        "hafed",
        "fedadagrad",
        "fedadam",
        "fedamsgrad",
        "fedyogi",
    }
    assert "focus" in names(affine=True) and "fedamsgrad" not in names(affine=True)
    assert info("scaffold").server_vectors == 2 and info("dsgd").server_vectors == 0
    assert info("afga").broadcast and not info("afga-adapted").broadcast


def test_an_algorithm_declares_its_exact_oracle_or_why_it_has_none():
    """Everything about an algorithm is declared where it is registered: a registration without
    an exact layout and without the reason, or a layout on a round that is not affine, is
    refused at import time."""
    with pytest.raises(ValueError, match="say why there is no exact oracle"):
        register("probe-no-reason", "probe", display="Probe")(lambda config: None)
    with pytest.raises(ValueError, match="needs affine=True"):
        register("probe-layout", "probe", display="Probe", exact_layout=server_model_layout)(
            lambda config: None
        )
    for name in names():
        alg = info(name)
        assert (alg.exact_layout is None) == bool(alg.not_exact), name
        assert alg.stated_rate, name


def test_earlier_names_of_clients_per_round_still_run_with_a_warning(prob):
    """One name for clients per round (``clients_per_round``); the earlier ``participation_m``
    and ``participation_p`` run the same simulation, with a DeprecationWarning."""
    new = simulate(prob, "fedavg", "uniform", rounds=3, lr=0.1, clients_per_round=2, seeds=2)
    with pytest.warns(DeprecationWarning, match="participation_m is now called clients_per_round"):
        old = simulate(prob, "fedavg", "uniform", rounds=3, lr=0.1, participation_m=2, seeds=2)
    np.testing.assert_array_equal(new.x_final, old.x_final)
    with pytest.raises(AssumptionError, match="not both"):
        simulate(
            prob, "fedavg", "uniform", rounds=3, lr=0.1, clients_per_round=2, participation_m=2
        )
