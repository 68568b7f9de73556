"""The claim catalog of docs/claims.md, one module per section; importing registers them.

Adding a claim::

    from fedtheory.simulation import simulate  # at the top of the module: a broken import
                                               # is a crash, never a verdict

    @claim("C7", source="003 Sec. 6", stated="what the paper says, in one line")
    def c7(ctx: Context):
        # docstring: the experiment, and "Criterion:" with the threshold fixed beforehand
        ...
        return judge(measured_value < 1e-10, f"measured {measured_value:.2e}",
                     criterion="relative error < 1e-10")

``judge`` turns the measured condition into ``holds``/``fails``, ``outside`` marks a setting
that violates the theorem's hypotheses; return a list with ``sub=`` for per-regime entries
(``C7/uniform``). ``ctx.pick(quick, full)`` sizes the two tiers; ``ctx.figure_path(id)`` is
where to draw (None when no figure is wanted).
"""

from fedtheory.verify.claims import adaptive, fedavg_bias, focus, graphs, nn, participation

__all__ = ["adaptive", "fedavg_bias", "focus", "graphs", "nn", "participation"]
