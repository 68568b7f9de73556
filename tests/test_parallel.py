"""fork_map: every item's result at its position, the items started in the order given with at
most ``workers`` running, one BLAS thread and no further forking in a child, failures named."""

from __future__ import annotations

import multiprocessing
import os
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_info, threadpool_limits

from fedtheory.errors import FedTheoryError
from fedtheory.parallel import can_fork, cpu_time, fork_all, fork_map


def _blas_threads() -> int:
    return max((p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"), default=1)


@settings(max_examples=8)
@given(n=st.integers(0, 7), workers=st.integers(1, 3))
def test_every_result_at_its_position_started_in_order_never_more_than_workers(n, workers):
    table = np.arange(n) ** 2  # reaches the children through fork, in a closure
    starts, got, outstanding = [], {}, []

    def on_start(i):
        starts.append(i)
        outstanding.append(len(starts) - len(got))

    for i, value in fork_map(lambda k: int(table[k]), range(n), workers=workers, on_start=on_start):
        got[i] = value
    assert got == {k: k * k for k in range(n)}
    assert starts == list(range(n)) and max(outstanding, default=0) <= workers


def test_children_are_other_processes_with_one_blas_thread_that_do_not_fork_again():
    parent = os.getpid()
    with threadpool_limits(limits=2, user_api="blas"):  # the parent's setting is not inherited
        out = dict(
            fork_map(lambda _: (os.getpid(), _blas_threads(), can_fork()), range(2), workers=2)
        )
        here = dict(fork_map(lambda _: _blas_threads(), range(2), workers=1))
    assert all(pid != parent and threads == 1 and not forks for pid, threads, forks in out.values())
    assert here == {0: 1, 1: 1}  # one worker: in this process, with one BLAS thread as well
    assert can_fork()


def _boom(k):
    if k == 2:
        raise ValueError("two is bad\nsecond line")
    return k


def test_an_error_names_the_item_and_stops_the_others():
    with pytest.raises(
        FedTheoryError, match=r"task 2 \(item two\) failed: ValueError: two is bad$"
    ):
        list(
            fork_map(
                _boom,
                range(4),
                workers=2,
                describe=lambda k: f"item {['zero', 'one', 'two', 'three'][k]}",
            )
        )
    assert not multiprocessing.active_children()


def test_a_child_that_dies_without_a_result_is_named_with_its_exit_code():
    with pytest.raises(FedTheoryError, match=r"task 1 \(1\) ended without a result: .* code 3"):
        list(fork_map(lambda k: os._exit(3) if k == 1 else k, range(3), workers=2))
    with pytest.raises(FedTheoryError, match=r"task [01] \([01]\) failed: .*pickle"):
        list(fork_map(lambda k: lambda: k, range(2), workers=2))  # a result that won't pickle
    assert not multiprocessing.active_children()


def test_leaving_the_loop_early_stops_the_children_still_running():
    t0 = time.perf_counter()
    for i, _ in fork_map(lambda k: time.sleep(60 * k), range(3), workers=2):
        assert i == 0
        break
    assert not multiprocessing.active_children() and time.perf_counter() - t0 < 30


def test_bad_workers_are_refused_and_cpu_time_counts_the_children():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(FedTheoryError, match="workers"):
            list(fork_map(abs, [1], workers=bad))
    c0 = cpu_time()
    list(fork_map(lambda _: sum(i * i for i in range(3_000_000)), range(2), workers=2))
    assert cpu_time() - c0 > 0.05  # the children's CPU, not only the parent's waiting


@settings(max_examples=8, deadline=None)
@given(data=st.data(), n=st.integers(0, 6), workers=st.integers(1, 3))
def test_fork_all_is_the_list_comprehension_in_any_start_order(data, n, workers):
    """fork_all (the simulator's seed blocks, the stability map, the bound search) returns
    ``[fn(item) for item in items]`` whatever the start order and the number of children; the
    function may be a closure over the caller's data."""
    table = np.arange(n) * 3.0
    order = data.draw(st.permutations(range(n)))
    got = fork_all(lambda k: (os.getpid(), float(table[k])), range(n), workers=workers, order=order)
    assert [v for _, v in got] == [3.0 * k for k in range(n)]
    pids = {pid for pid, _ in got}
    if workers == 1 or n <= 1:
        assert pids <= {os.getpid()}  # here, in order
    elif can_fork():
        assert os.getpid() not in pids
    with pytest.raises(FedTheoryError, match="every position"):
        fork_all(abs, [1, 2], workers=1, order=[0, 0])


def test_reused_children_run_item_after_item_and_stop_on_an_error_or_an_early_exit():
    """``fresh=False``: at most ``workers`` children, each running several items; an error
    names its item and stops the others, as does leaving the loop early."""
    if not can_fork():
        pytest.skip("this platform cannot fork processes (parallel.can_fork is False)")
    got = dict(fork_map(lambda k: (os.getpid(), k * k), range(9), workers=2, fresh=False))
    assert {k: v for k, (_, v) in got.items()} == {k: k * k for k in range(9)}
    pids = {pid for pid, _ in got.values()}
    assert len(pids) <= 2 and os.getpid() not in pids

    def fails(k):
        if k == 3:
            raise ValueError("three")
        time.sleep(0.01)
        return k

    with pytest.raises(FedTheoryError, match=r"task 3 \(3\) failed: ValueError: three"):
        list(fork_map(fails, range(8), workers=2, fresh=False))
    before = len(multiprocessing.active_children())
    for _ in fork_map(lambda k: time.sleep(0.05 * k), range(6), workers=2, fresh=False):
        break
    assert len(multiprocessing.active_children()) <= before
