"""Typed exceptions. Every one of them names the violated assumption in its message.

The command line catches :class:`FedTheoryError` and prints its message as one line.
"""


class FedTheoryError(ValueError):
    """Base class: bad input or an unmet assumption, explained in one sentence."""


class AssumptionError(FedTheoryError):
    """A matrix, probability vector, step size or graph violates a stated assumption
    (e.g. "W is not column stochastic: column 3 sums to 0.97")."""


class SettingError(AssumptionError):
    """A setting that is invalid where it is used, although it could only be evaluated there
    (a bound spec's step size ``lr = "-1/L_f"`` is negative on every instance): bad input,
    never a property of one instance to skip."""


class SizeError(AssumptionError):
    """Work refused before it starts: its estimate (memory, time, a count of tasks or workers)
    exceeds a limit; the message gives the estimate, the limit and how to proceed."""


class NotInterpolableError(AssumptionError):
    """Interpolation data that no function of the class fits: an interpolation inequality of
    the class fails (or holds only with equality) for one client's ordered pair of data rows.
    ``client``, ``pair`` (the rows (j, k)) and ``margin`` name the worst one."""

    def __init__(self, message: str, client: int = -1, pair: tuple = (), margin: float = 0.0):
        super().__init__(message)
        self.client, self.pair, self.margin = client, pair, margin


class BackendUnavailableError(FedTheoryError):
    """The requested array backend cannot run on this machine (e.g. CuPy without a GPU)."""


class UnknownOptionError(FedTheoryError, TypeError):
    """A keyword argument that the function or algorithm does not read (a typo would otherwise
    run a different experiment); the message lists the valid names. Also a ``TypeError``, as
    Python raises for an unexpected keyword argument."""


class StoreError(FedTheoryError):
    """A sweep store that cannot be used as it is: damaged data or metadata (a resume repairs
    what it can), another store format, or a store made from another spec."""


class StoreInUseError(StoreError):
    """Another driver is running a sweep into the same store (one driver per store)."""


class MissingExtraError(FedTheoryError, ImportError):
    """A feature needs an optional extra that is not installed; the message names the extra and
    the command that installs it (``pip install 'fedtheory[nn]'``). Also an ``ImportError``, as
    Python raises for a missing module. ``extra`` holds the extra's name."""

    def __init__(self, message: str, extra: str = "") -> None:
        super().__init__(message)
        self.extra = extra


class MetricNotRecordedError(FedTheoryError, KeyError, AttributeError):
    """A metric the run could have recorded but did not (a run records ``error`` alone by
    default); the message names the ``metrics=[...]`` that records it. Also a ``KeyError``
    (``result.metrics[name]``) and an ``AttributeError`` (``result.name``), so ``name in
    result.metrics`` and ``getattr(result, name, None)`` keep their meaning."""

    def __str__(self) -> str:  # the message as written (KeyError would quote it)
        return BaseException.__str__(self)


class HostConversionError(FedTheoryError, TypeError):
    """A device array of the strict backend crossed to the host implicitly (``np.asarray``,
    ``__array__``, a NumPy array mixed into device arithmetic), where CuPy raises ``TypeError``;
    the message names the call site. Also a ``TypeError``, as CuPy raises."""


class NotInCuPyError(FedTheoryError, AttributeError):
    """A NumPy function or array method that CuPy does not provide, asked of the strict backend
    (which offers only CuPy's functions). Also an ``AttributeError``, as ``cupy.name`` raises,
    so ``hasattr(xp, name)`` stays False."""
