"""The accuracy of a float64 computation: the absolute floor below which a value is round-off.

A quantity that is zero in exact arithmetic (an exactly convergent algorithm's floor, the spread
of rates that are equal by construction, the slope of a metric that does not move) comes out of
a float64 computation as a few units in the last place of the numbers it was computed from, with
either sign. Comparing it with zero, or with a tolerance relative to zero, therefore decides on
rounding. The comparison that means something is against an absolute floor at the computation's
own scale: ``ulps`` units of the last place (machine epsilon 2^-52 = 2.2e-16) of the magnitude
the result was computed from, times the number of rounding steps accumulated in sequence (the
error bound of a sum of n terms grows like n u: Higham 2002, *Accuracy and Stability of
Numerical Algorithms*, 2nd ed., Sec. 3.1 and Lemma 3.1).

Examples of the scale: 1 for a per-round rate or a relative error; ||x*||^2 for a floor
lim E||x_r - x*||^2; 1 for a log-slope of metrics (the log of a value with relative error
delta moves by delta).
"""

from __future__ import annotations

import math

import numpy as np

from fedtheory.errors import AssumptionError

__all__ = ["EPS", "ULPS", "absolute_floor", "beyond_floor"]

#: float64 machine epsilon (the spacing of floats at 1), 2^-52.
EPS = float(np.finfo(np.float64).eps)
#: Units in the last place granted to each sequence of rounding steps (a safety factor over the
#: first-order bound n u: reductions, products and square roots each add a few).
ULPS = 64


def absolute_floor(scale: float, *, steps: int = 1, ulps: int = ULPS) -> float:
    """The absolute accuracy of a float64 result computed at magnitude ``scale``.

    Parameters
    ----------
    scale : float
        The magnitude of the numbers the result was computed from (1 for a rate or a relative
        error, ||x*||^2 for a mean-square floor).
    steps : int
        Rounding steps accumulated in sequence (e.g. rounds x local steps of a simulation).
    ulps : int
        Units in the last place per step (default :data:`ULPS`).

    Returns
    -------
    float
        ``ulps * steps * EPS * |scale|``: a value whose magnitude lies at or below it is zero up
        to the computation's accuracy.

    Raises
    ------
    AssumptionError
        A scale that is not finite, or steps or ulps below 1.

    Examples
    --------
    >>> absolute_floor(1.0)  # a rate: 64 ulps of 1
    1.4210854715202004e-14
    """
    s = float(scale)
    if not math.isfinite(s):
        raise AssumptionError(f"the scale of an accuracy floor must be finite, got {scale!r}")
    if int(steps) < 1 or int(ulps) < 1:
        raise AssumptionError(f"steps and ulps must be >= 1, got steps={steps}, ulps={ulps}")
    return float(ulps) * float(steps) * EPS * abs(s)


def beyond_floor(value: float, reference: float, floor: float) -> int:
    """+1 when ``value`` exceeds ``reference`` by more than ``floor``, -1 when it lies more than
    ``floor`` below it, 0 when the two agree up to the floor (a tie at the computation's
    accuracy)."""
    if value > reference + floor:
        return 1
    if value < reference - floor:
        return -1
    return 0
