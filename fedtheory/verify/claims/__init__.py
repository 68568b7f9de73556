"""The claim catalog of docs/claims.md, one module per section; importing registers them.

Adding a claim::

    from fedtheory.simulation import simulate  # at the top of the module: a broken import
                                               # is a crash, never a verdict

    @claim("C7", source="003 Sec. 6", stated="what the paper says, in one line")
    def c7(ctx: Context):
        # docstring: the experiment, "Criterion:" with the rule fixed before measuring, and the
        # test (which interval, how many seeds)
        ...
        effect = mean_interval(per_seed_differences, 0.95, "rounds (B - A)")
        return judge_effect(effect, f"A is {effect.text()} rounds ahead", seeds=n,
                            criterion="interval above 0 (below 0: fails)",
                            test="paired t over seeds (95%)")

``judge_effect`` reads the interval (``holds`` / ``fails`` / ``inconclusive``), ``judge`` an exact
computation against a tolerance, ``outside`` marks a setting that violates the theorem's
hypotheses, ``invariant`` a property of the implementation, ``measurement`` a quantity no outcome
of which could contradict the claim (verdict ``measured``), ``not_stated`` a formula the paper's
text does not give (:mod:`fedtheory.verify.result`); comparisons between algorithms sample seeds
sequentially (:func:`fedtheory.analysis.stats.sequential`). Return a list with ``sub=`` for
per-regime entries (``C7/uniform``). ``ctx.pick(quick, full)`` sizes the two tiers;
``ctx.figure_path(id)`` is where to draw (None when no figure is wanted).
"""

from fedtheory.verify.claims import (
    adaptive,
    fedavg_bias,
    focus,
    graphs,
    hafed,
    nn,
    participation,
    tuned,
)

__all__ = ["adaptive", "fedavg_bias", "focus", "graphs", "hafed", "nn", "participation", "tuned"]
