"""Performance estimation of federated rounds: worst cases over smooth strongly convex clients.

Every f_i L-smooth and mu-strongly convex (F_{mu,L}; mu = 0: smooth convex), the start within
sqrt(D2) of x*, and optionally the heterogeneity at x* bounded by zeta2. The worst case of a
quantity over that whole class (not only over quadratics, :mod:`fedtheory.analysis.exact`) is a
semidefinite program (Drori and Teboulle 2014; Taylor, Hendrickx and Glineur 2017), built here
from the algorithm's own round and solved with a named solver.

Modules
-------
- :mod:`~fedtheory.analysis.pep.trace`: the round over leaf vectors, read off ``init``/``round``
  by a tracing stand-in problem; the linearity check; the participation paths.
- :mod:`~fedtheory.analysis.pep.program`: the program in PEPit, its sizes and cap, the
  solvers (Clarabel, SCS), the worst instance's vectors.
- :mod:`~fedtheory.analysis.pep.worst`: the quantities (after R rounds, the floor, the
  per-round factor estimate, a Lyapunov function's contraction).

Needs the optional extra ``pep`` (PEPit, cvxpy, Clarabel, SCS), named in one line when missing.
"""

from fedtheory.analysis.pep.program import (
    MAX_CONSTRAINTS,
    MAX_GRAM,
    PepSizeError,
    Quad,
    Sizes,
    Solution,
    solve,
)
from fedtheory.analysis.pep.trace import (
    NotTraceableError,
    Paths,
    Trace,
    TracingProblem,
    participation_paths,
    trace,
)
from fedtheory.analysis.pep.worst import (
    METRICS,
    WorstCase,
    eliminate,
    lyapunov_contraction,
    rate_estimate,
    worst_after_rounds,
    worst_floor,
)

__all__ = [
    "MAX_CONSTRAINTS",
    "MAX_GRAM",
    "METRICS",
    "NotTraceableError",
    "Paths",
    "PepSizeError",
    "Quad",
    "Sizes",
    "Solution",
    "Trace",
    "TracingProblem",
    "WorstCase",
    "eliminate",
    "lyapunov_contraction",
    "participation_paths",
    "rate_estimate",
    "solve",
    "trace",
    "worst_after_rounds",
    "worst_floor",
]
