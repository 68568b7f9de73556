"""The claim registry, the runner and the `fedtheory verify` CLI contract (cheap claims only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from fedtheory._version import __version__
from fedtheory.analysis.stats import Effect
from fedtheory.cli import main
from fedtheory.parallel import Engine
from fedtheory.verify import (
    FAILS,
    FULL,
    HOLDS,
    INCONCLUSIVE,
    INVARIANT,
    MEASURED,
    NOT_RUN,
    NOT_STATED,
    OUTSIDE,
    QUICK,
    REGISTRY,
    VERDICTS,
    Claim,
    Context,
    Outcome,
    all_claims,
    combined,
    invariant,
    judge,
    judge_effect,
    measurement,
    not_stated,
    outside,
    replicated,
    run,
    run_claims,
)
from fedtheory.verify.report import _measured as measured_cell
from fedtheory.verify.runner import longest_first

EX = dict(effect=Effect.exact(1.0, "unit"), test="exact")

CATALOG = [f"G{i}" for i in range(1, 6)]
CATALOG += [f"P{i}" for i in range(1, 5)] + [f"F{i}" for i in range(1, 4)]
CATALOG += [f"C{i}" for i in range(1, 9)] + [f"A{i}" for i in range(1, 14)]
CATALOG += [f"N{i}" for i in range(1, 5)]


def test_registry_holds_the_catalog_in_order():
    assert [c.id for c in all_claims() if not c.id.startswith("Z")] == CATALOG
    for c in all_claims():
        assert c.source and c.stated


def test_every_claim_states_its_threshold_in_its_docstring():
    """Thresholds are fixed in the docstring, before looking at results (criterion/verdict)."""
    for c in all_claims():
        if c.id.startswith("Z"):
            continue
        doc = (c.check.__doc__ or "").lower()
        assert "criteri" in doc or "verdict" in doc, f"{c.id} states no criterion"


def test_judge_and_outside_compute_the_verdict():
    assert judge(True, 1.0, criterion="x", **EX).verdict == HOLDS
    assert judge(False, 1.0, criterion="x", **EX).verdict == FAILS
    o = outside("rho > M/(M+N)", 0.99, **EX)
    assert o.verdict == OUTSIDE and o.evidence["violated_assumption"] == "rho > M/(M+N)"
    assert o.reason == "rho > M/(M+N)"
    with pytest.raises(ValueError, match="verdict must be one of"):
        Outcome(1.0, "probably", **EX)


def test_a_verdict_needs_its_effect_and_test_but_not_stated_does_not():
    with pytest.raises(ValueError, match="needs its effect and the test"):
        judge(True, 1.0, criterion="x", effect=None, test="t")
    with pytest.raises(ValueError, match="needs its effect and the test"):
        Outcome(1.0, INCONCLUSIVE, effect=Effect.exact(0.0, "u"), test="")
    o = not_stated("003 Thm 1: the rate is lost", "rho 0.9")
    assert o.verdict == NOT_STATED and o.reason == "003 Thm 1: the rate is lost"


def test_the_interval_rule_reads_the_side_of_the_null_value():
    up, down, tie = (
        Effect(2.0, 1.0, 3.0, "u"),
        Effect(-2.0, -3.0, -1.0, "u"),
        Effect(0.0, 0.0, 0.0, "u"),
    )
    kw = dict(criterion="c", test="t")
    assert judge_effect(up, "m", **kw).verdict == HOLDS
    assert judge_effect(down, "m", **kw).verdict == FAILS
    assert judge_effect(tie, "m", **kw).verdict == INCONCLUSIVE  # a tie is never a fails
    # a claim "at most -1/2" (an upper bound on an exponent)
    assert (
        judge_effect(Effect(-0.8, -0.9, -0.7, "u"), "m", null=-0.5, claimed=-1, **kw).verdict
        == HOLDS
    )
    assert (
        judge_effect(Effect(-0.4, -0.45, -0.35, "u"), "m", null=-0.5, claimed=-1, **kw).verdict
        == FAILS
    )
    assert (
        judge_effect(Effect(-0.5, -0.6, -0.4, "u"), "m", null=-0.5, claimed=-1, **kw).verdict
        == INCONCLUSIVE
    )


def test_a_tie_at_the_computations_accuracy_decides_nothing():
    """An interval that clears the null value only by round-off is a tie once a floor is
    given; the same interval decides without one (the old rule)."""
    kw = dict(criterion="c", test="t")
    roundoff = Effect(2e-17, 1e-17, 3e-17, "slope")
    assert judge_effect(roundoff, "m", **kw).verdict == HOLDS
    assert judge_effect(roundoff, "m", floor=1e-14, **kw).verdict == INCONCLUSIVE
    assert (
        judge_effect(Effect(-2e-17, -3e-17, -1e-17, "u"), "m", floor=1e-14, **kw).verdict
        == INCONCLUSIVE
    )
    assert judge_effect(Effect(0.3, 0.1, 0.5, "u"), "m", floor=1e-14, **kw).verdict == HOLDS
    assert judge_effect(Effect(-0.3, -0.5, -0.1, "u"), "m", floor=1e-14, **kw).verdict == FAILS


@pytest.mark.parametrize("verdict", [HOLDS, FAILS])
def test_a_decision_whose_fresh_seed_check_disagrees_is_not_kept(verdict):
    """C2/arbitrary's case: decided at a sequential stop (13.4 +- 10.3 rounds), the fresh block
    gives 6.7 [-11.8, 25.2]: not a ``holds``. A fresh block on the same side keeps the verdict,
    whatever the claim (the rule sits in ``Outcome``)."""
    sign = 1.0 if verdict == HOLDS else -1.0
    stop = Effect(sign * 13.4, sign * 3.1, sign * 23.7, "rounds", 0.99, 60)
    if sign < 0:
        stop = Effect(-13.4, -23.7, -3.1, "rounds", 0.99, 60)
    fresh_tie = Effect(sign * 6.7, -11.8, 25.2, "rounds", 0.95, 20)
    agree = Effect(
        sign * 8.0, min(sign * 2.0, sign * 14.0), max(sign * 2.0, sign * 14.0), "rounds", 0.95, 20
    )
    kw = dict(criterion="c", test="t", effect=stop)
    o = combined(verdict, "m", confirmation=fresh_tie, **kw)
    assert o.verdict == INCONCLUSIVE and "fresh-seed check" in o.reason
    assert o.evidence["verdict_before_fresh_seed_check"] == verdict
    assert combined(verdict, "m", confirmation=agree, **kw).verdict == verdict
    assert combined(verdict, "m", **kw).verdict == verdict  # no early stop, no fresh block
    opposite = Effect(
        -sign * 8.0,
        min(-sign * 2.0, -sign * 14.0),
        max(-sign * 2.0, -sign * 14.0),
        "rounds",
        0.95,
        20,
    )
    assert combined(verdict, "m", confirmation=opposite, **kw).verdict == INCONCLUSIVE
    diverged = Effect(None, None, None, "rounds", 0.95, 20)
    assert combined(verdict, "m", confirmation=diverged, **kw).verdict == INCONCLUSIVE
    o = judge_effect(stop, "m", confirmation=fresh_tie, criterion="c", test="t")
    assert o.verdict == INCONCLUSIVE


def test_the_fresh_seed_check_reads_a_non_inferiority_margin():
    """A non-inferiority row is judged against its margin, log(1.25): the fresh block must lie
    below it too."""
    margin = 0.2231
    stop = Effect(0.05, -0.05, 0.15, "log ratio", 0.99, 32)  # below the margin: holds
    kw = dict(criterion="c", test="t", effect=stop, null=margin)
    below = Effect(0.0, -0.1, 0.1, "log ratio", 0.95, 8)  # contains 0, below the margin
    across = Effect(0.2, 0.1, 0.3, "log ratio", 0.95, 8)
    assert combined(HOLDS, "m", confirmation=below, **kw).verdict == HOLDS
    assert combined(HOLDS, "m", confirmation=across, **kw).verdict == INCONCLUSIVE
    assert replicated(stop, below, null=margin) and not replicated(stop, below, null=0.0)


def test_a_violated_invariant_is_a_crash_not_a_verdict():
    assert invariant(True, "ok", criterion="c", **EX).verdict == INVARIANT
    with pytest.raises(AssertionError, match="invariant violated"):
        invariant(False, "residual 1e-3", criterion="c", **EX)


def _crash(ctx):
    raise ZeroDivisionError("boom")


def _missing(ctx):
    import fedtheory.not_there  # noqa: F401, PLC0415  (the failed import under test)


def _regimes(ctx):
    return [
        judge(True, 0.5, criterion="always", sub="a", **EX),
        outside("K < 1", 2.0, sub="b", stated="per regime", **EX),
    ]


def _fails(ctx):
    return judge(
        1.0 > 2.0,
        1.0,
        criterion="1 > 2",
        effect=Effect(-1.0, -1.5, -0.5, "u", 0.95, 7),
        seeds=7,
        test="paired t",
    )


def _invariant_ok(ctx):
    return [
        invariant(True, 1e-16, criterion="residual < 1e-10", **EX, sub="inv"),
        not_stated("Thm 9: formula lost", "rho 0.5", sub="lost"),
    ]


def _invariant_broken(ctx):
    return invariant(False, 1e-3, criterion="residual < 1e-10", **EX)


def _unconfirmed(ctx):
    return combined(
        HOLDS,
        "13.4 rounds ahead",
        criterion="c",
        test="paired t",
        effect=Effect(13.4, 3.1, 23.7, "rounds", 0.99, 60),
        confirmation=Effect(6.7, -11.8, 25.2, "rounds", 0.95, 20),
    )


def _measurement(ctx):
    return measurement(
        "c <= 2.5 over 250 instances",
        criterion="none: a constant always exists",
        effect=Effect.exact(2.5, "implied constant c"),
        test="exact",
    )


def _figure(ctx):

    path = ctx.figure_path("Z4")
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0])
    fig.savefig(path, dpi=40)
    plt.close(fig)
    return judge(True, 1, criterion="drawn", figure=str(path), **EX)


@pytest.fixture
def extra_claims(monkeypatch):
    all_claims()  # register the catalog first
    claims = (
        ("Z1", _crash),
        ("Z2", _missing),
        ("Z3", _regimes),
        ("Z4", _figure),
        ("Z5", _fails),
        ("Z6", _invariant_ok),
        ("Z7", _invariant_broken),
        ("Z8", _measurement),
        ("Z9", _unconfirmed),
    )
    regimes = {"Z3": ("a", "b"), "Z6": ("inv", "lost")}  # declared as a claim declares them
    for cid, fn in claims:
        monkeypatch.setitem(
            REGISTRY, cid, Claim(cid, "test", f"test claim {cid}", fn, regimes=regimes.get(cid, ()))
        )


def test_a_failed_import_inside_a_check_is_a_crash_not_a_verdict(extra_claims, capsys):
    (r,) = run("Z2")
    assert r.verdict == NOT_RUN and not r.ran and "fedtheory.not_there" in r.error
    assert main(["verify", "--only", "Z2,Z5"]) == 1
    assert "claim Z2 could not run: ModuleNotFoundError" in capsys.readouterr().err


def test_a_fresh_process_finds_the_whole_catalog():
    """``fedtheory verify`` in a new interpreter (nothing imported beforehand, as for a user)
    lists every claim of the catalog."""
    done = subprocess.run(
        [sys.executable, "-m", "fedtheory", "verify", "--list"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == CATALOG


def test_a_broken_module_used_by_a_claim_makes_verify_exit_non_zero(tmp_path):
    """One bad import line in a module a claim uses (analysis/rates.py for C1) must turn
    ``fedtheory verify --only C1`` into a crash, never into a polite verdict with exit 0. The
    failure is injected by a sitecustomize that makes importing the module raise."""
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nsys.modules['fedtheory.analysis.rates'] = None  # import raises\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "FEDTHEORY_NO_PROGRESS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "fedtheory", "verify", "--only", "C1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode != 0
    assert "fedtheory.analysis.rates" in done.stderr and "holds" not in done.stdout


def test_per_regime_entries(extra_claims):
    rs = run("Z3")
    assert [r.id for r in rs] == ["Z3/a", "Z3/b"]
    assert [r.verdict for r in rs] == [HOLDS, OUTSIDE]
    assert rs[1].stated == "per regime" and rs[1].reason == "K < 1"


def test_only_a_regime_keeps_that_regime(extra_claims, capsys):
    assert main(["verify", "--only", "Z3/b", "--json", "-"]) == 0
    assert [d["id"] for d in json.loads(capsys.readouterr().out)["results"]] == ["Z3/b"]


def test_json_contract_and_exit_zero_when_every_claim_ran(extra_claims, capsys):
    assert main(["verify", "--only", "Z5,Z3", "--json", "-"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out)  # stdout holds the JSON only: no table, no progress bar
    assert report["version"] == __version__ and report["seed"] == 0 and report["tier"] == QUICK
    assert datetime.fromisoformat(report["date"]).utcoffset() == timedelta(0)  # UTC ISO 8601
    assert report["schema"] == 2 and "1 fails" in report["summary"]
    data = report["results"]
    assert isinstance(data, list) and [d["id"] for d in data] == ["Z3/a", "Z3/b", "Z5"]
    for d in data:
        assert {"id", "verdict", "stated", "measured", "reason", "effect", "seeds", "test"} <= (
            d.keys()
        )
        assert d["verdict"] in VERDICTS
        assert isinstance(d["stated"], str) and isinstance(d["measured"], str | int | float)
        assert {"estimate", "ci_low", "ci_high", "unit"} <= d["effect"].keys()
    z5 = data[-1]
    assert z5["effect"] == {
        "estimate": -1.0,
        "ci_low": -1.5,
        "ci_high": -0.5,
        "unit": "u",
        "confidence": 0.95,
    }
    assert z5["seeds"] == 7 and z5["test"] == "paired t" and z5["reason"] is None


def test_invariants_and_not_stated_are_kept_apart(extra_claims, capsys):
    assert main(["verify", "--only", "Z5,Z6"]) == 0
    out = capsys.readouterr().out
    table, _, rest = out.partition("Not verdicts about the papers")
    assert "Z5" in table and "Z6" not in table
    assert "Z6/inv" in rest and "invariant" in rest and "Z6/lost" in rest and "not stated" in rest
    assert "claims about the papers: 1 fails; besides them: 1 invariant, 1 not stated" in out


def test_a_measurement_is_reported_apart_and_not_counted_as_a_verdict(
    extra_claims, tmp_path, capsys
):
    """``measured`` (a quantity no outcome of which could contradict the claim) goes through
    JSON, the table, Markdown and HTML, and the summary counts it besides the verdicts."""
    js, md, page = tmp_path / "r.json", tmp_path / "v.md", tmp_path / "r.html"
    assert (
        main(
            [
                "verify",
                "--only",
                "Z5,Z8",
                "--json",
                str(js),
                "--markdown",
                str(md),
                "--html",
                str(page),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    report = json.loads(js.read_text())
    z8 = {d["id"]: d for d in report["results"]}["Z8"]
    assert z8["verdict"] == MEASURED and MEASURED in VERDICTS
    assert z8["effect"]["estimate"] == 2.5 and z8["measured"] == "c <= 2.5 over 250 instances"
    summary = "claims about the papers: 1 fails; besides them: 1 measured"
    assert report["summary"] == summary and summary in out and summary in md.read_text()
    table, _, rest = out.partition("Not verdicts about the papers")
    assert "Z5" in table and "Z8" not in table and "Z8" in rest and "measured" in rest
    text = page.read_text()
    papers, other = text.index("<h2>Claims about the papers</h2>"), text.index("<h2>Measurements")
    assert text.index("<h2>Findings</h2>") < text.index('id="Z5"') < papers  # a fail first
    assert papers < other < text.index('id="Z8"')
    assert "1 holds" not in report["summary"]


def test_a_broken_invariant_makes_verify_exit_one(extra_claims, capsys):
    assert main(["verify", "--only", "Z7"]) == 1
    assert "claim Z7 could not run: InvariantViolation" in capsys.readouterr().err


def test_a_crash_is_recorded_and_exits_non_zero(extra_claims, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["verify", "--only", "Z1,Z5", "--json", str(out)]) == 1
    data = {d["id"]: d for d in json.loads(out.read_text())["results"]}
    assert data["Z1"]["ran"] is False and "ZeroDivisionError: boom" in data["Z1"]["error"]
    assert data["Z1"]["verdict"] == NOT_RUN and NOT_RUN not in VERDICTS
    assert data["Z5"]["ran"] is True and data["Z5"]["verdict"] == FAILS
    captured = capsys.readouterr()
    assert "CRASHED" in captured.out and "claim Z1 could not run" in captured.err


def test_unknown_claim_id_is_one_line_and_exit_two(capsys):
    assert main(["verify", "--only", "Q7"]) == 2
    err = capsys.readouterr().err
    assert "unknown claim id Q7" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("only", "says"),
    [
        (",", "names no claim"),
        (" , ", "names no claim"),
        ("C2/", "no regime after the slash"),
        ("G1,C2/", "no regime after the slash"),
    ],
)
def test_an_empty_selection_is_refused_before_anything_runs(only, says, capsys, monkeypatch):
    """``--only ,`` used to run nothing and exit 0, and ``--only C2/ --full`` ran C2's whole
    thorough tier (five minutes) before refusing the empty regime."""
    ran = []
    monkeypatch.setattr("fedtheory.cli.verify._run", lambda *a, **k: ran.append(a) or 0)
    assert main(["verify", "--only", only, "--full"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and not ran


def test_html_report_is_self_contained(extra_claims, tmp_path):
    page = tmp_path / "r.html"
    assert main(["verify", "--only", "Z4,Z5,Z6", "--html", str(page)]) == 0
    text = page.read_text()
    assert "data:image/png;base64," in text and "Z5" in text and "fails" in text
    assert "<img" in text and 'src="http' not in text
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    # the failing claim's evidence is open, first; every other claim's collapsed; the figure's
    # alt text says what it shows
    assert text.count('<details class=claim id="') == 4
    assert text.count(" open>") == 1 and '<details class=claim id="Z5" open>' in text
    assert 'alt="Figure of claim Z4 (test): the measurement behind' in text
    assert 'alt="Z4.png"' not in text
    # the findings open the page; the invariants have their own section, after the papers'
    findings = text.index("<h2>Findings</h2>")
    papers = text.index("<h2>Claims about the papers</h2>")
    invariants = text.index("<h2>Measurements, implementation invariants")
    assert findings < text.index('id="Z5"') < papers < text.index('id="Z4"') < invariants
    assert invariants < text.index('id="Z6-inv"')


def test_markdown_page_holds_the_printed_table(extra_claims, tmp_path, capsys):
    """``--markdown OUT`` (how docs/verdicts.md is made) holds the very table printed, its
    summary line and the provenance of the run."""
    page = tmp_path / "v.md"
    assert main(["verify", "--only", "Z5", "--markdown", str(page)]) == 0
    printed = capsys.readouterr().out
    text = page.read_text()
    findings, _, rest = printed.partition("The full table (1 results):\n\n")
    table = rest.split("\n\n")[0]
    assert table in text and "Z5" in table and "fails" in table and "1 results" in text
    assert findings.split("\n\n", 1)[1].strip() in text  # the findings first, there too
    assert text.index("fails (1):") < text.index(table)
    assert f"fedtheory {__version__}" in text and "quick tier" in text
    assert main(["verify", "--only", "Z5", "--markdown", str(tmp_path)]) == 2  # a folder


def test_figures_of_the_report_are_never_temporary_paths(extra_claims, tmp_path, capsys):
    """With --html and --json OUT the figures go next to the JSON (OUT-figures/), so its
    ``figure`` fields name files that exist; with --json - they are inlined in the HTML only
    and the JSON names none."""
    page, report = tmp_path / "r.html", tmp_path / "r.json"
    assert main(["verify", "--only", "Z4", "--html", str(page), "--json", str(report)]) == 0
    (z4,) = json.loads(report.read_text())["results"]
    assert Path(z4["figure"]).is_file() and Path(z4["figure"]).parent == tmp_path / "r-figures"
    capsys.readouterr()
    assert main(["verify", "--only", "Z4", "--html", str(page), "--json", "-"]) == 0
    (z4,) = json.loads(capsys.readouterr().out)["results"]
    assert z4["figure"] is None and "data:image/png;base64," in page.read_text()


def test_table_lists_stated_measured_verdict(extra_claims, capsys):
    assert main(["verify", "--only", "Z5"]) == 0
    out = capsys.readouterr().out
    assert "claim" in out and "stated" in out and "measured" in out and "verdict" in out
    assert "Z5/table7" in out or "Z5" in out


def test_a_cheap_catalog_claim_runs_end_to_end():
    """G1 through the CLI: the paper's ring gaps (a few milliseconds of graph work)."""
    (r,) = run("G1", Context())
    assert r.ran and r.verdict in VERDICTS and "ring 50" in r.measured


def test_unknown_claim_id_among_known_ones_names_it(capsys):
    assert main(["verify", "--only", "G1,X9", "--json", "-"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown claim id X9" in err[0]


#: Fields of a result that are timings; every other one is the same bits wherever it ran.
TIMINGS = ("seconds", "cpu_seconds")


def _blas_threads(ctx):
    """A claim that measures the BLAS threads it runs with."""
    n = max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")
    return judge(True, f"{n} BLAS threads", criterion="measured", **EX)


def _fields(results) -> list[dict]:
    return [{k: v for k, v in r.to_dict().items() if k not in TIMINGS} for r in results]


def test_results_are_the_same_bits_for_any_number_of_workers(monkeypatch):
    """Cheap claims with random draws and BLAS products, in this process and on two forked
    workers, from a parent whose BLAS has two threads: every field but the timings agrees, and
    each claim ran with one BLAS thread either way (a BLAS reduction split over two threads
    may round differently from one)."""
    all_claims()
    monkeypatch.setitem(REGISTRY, "Z9", Claim("Z9", "test", "BLAS threads", _blas_threads))
    claims = [REGISTRY[c] for c in ("G2", "P2", "P4", "F1", "C6", "Z9")]
    with threadpool_limits(limits=2, user_api="blas"):
        here = run_claims(claims, Context(), quiet=True, workers=1)
        forked = run_claims(claims, Context(), quiet=True, workers=2)
    assert [r.id for r in here] == [r.id for r in forked] and len(here) >= len(claims)
    assert all(r.ran for r in here)
    assert _fields(here) == _fields(forked)
    assert here[-1].measured == "1 BLAS threads"
    assert all(r.cpu_seconds >= 0 and r.seconds > 0 for r in forked)


def _pid(ctx):
    return judge(True, os.getpid(), criterion="measured", **EX)


def test_claims_run_in_forked_workers_on_the_cpu_and_here_on_a_gpu_backend(monkeypatch):
    """A CUDA context does not survive fork: on a GPU backend every claim runs in this process
    whatever ``workers`` says."""
    all_claims()
    for cid in ("Z1", "Z2"):
        monkeypatch.setitem(REGISTRY, cid, Claim(cid, "test", "where it ran", _pid))
    claims = [REGISTRY["Z1"], REGISTRY["Z2"]]
    forked = run_claims(claims, Context(), quiet=True, workers=2)
    assert os.getpid() not in {r.measured for r in forked}
    monkeypatch.setattr("fedtheory.verify.runner.get_backend", lambda: object())  # a GPU module
    here = run_claims(claims, Context(), quiet=True, workers=2)
    assert {r.measured for r in here} == {os.getpid()}


def test_the_most_expensive_claims_start_first(monkeypatch):
    """The runner's order: decreasing measured cost of the tier (the quick tier's where the
    tier was not measured), a claim never measured first, ties in the catalog's order."""
    monkeypatch.setattr(
        "fedtheory.verify.registry.measured_costs",
        lambda: {"quick": {"G1": 1.0, "G2": 5.0, "G3": 1.0}, "full": {"G1": 9.0}},
    )
    claims = [REGISTRY[c] for c in ("G1", "G2", "G3", "G4")]
    assert [c.id for c in longest_first(claims, QUICK)] == ["G4", "G2", "G1", "G3"]
    assert [c.id for c in longest_first(claims, FULL)] == ["G4", "G1", "G2", "G3"]
    assert REGISTRY["G4"].cost(QUICK) is None and REGISTRY["G2"].cost(FULL) == 5.0


def test_every_quick_claim_has_a_measured_cost():
    """benchmarks/bench_verify.py --update keeps the costs file current: a claim added to the
    quick tier without a measurement would be started first whatever its cost."""
    for c in all_claims():
        if c.runs_in(QUICK):
            cost = c.cost(QUICK)
            assert cost is not None and cost >= 0, (
                f"{c.id}: run benchmarks/bench_verify.py --update"
            )


@pytest.mark.slow
def test_verify_on_a_dask_scheduler_equals_one_process():
    """``verify --scheduler`` runs the claims as tasks of a running Dask scheduler (here a local
    cluster of one worker); each claim's result does not depend on where it ran."""
    pytest.importorskip("distributed", reason="the fedtheory[sweep] extra is not installed")
    claims = [REGISTRY[c] for c in ("G1", "P2", "F1")]
    here = run_claims(claims, Context(), quiet=True, workers=1)
    with Engine(workers=1) as engine:
        dask = run_claims(claims, Context(), quiet=True, scheduler=engine.address)
    assert _fields(here) == _fields(dask)


def _block_mnist1d(monkeypatch):
    """A core install without the 'nn' extra, simulated: importing mnist1d raises ImportError
    (a None entry in sys.modules), whatever is installed here."""
    for name in [m for m in sys.modules if m == "mnist1d" or m.startswith("mnist1d.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mnist1d", None)


def test_a_missing_extra_is_not_run_naming_it_and_verify_exits_zero(monkeypatch, capsys):
    _block_mnist1d(monkeypatch)
    assert main(["verify", "--only", "G1,N1", "--json", "-"]) == 0
    captured = capsys.readouterr()
    rows = {d["id"]: d for d in json.loads(captured.out)["results"]}
    n1 = rows["N1"]
    assert n1["verdict"] == NOT_RUN and n1["ran"] is False and n1["error"] is None
    assert "pip install 'fedtheory[nn]'" in n1["reason"] and "mnist1d" in n1["reason"]
    assert rows["G1"]["verdict"] == HOLDS and "Traceback" not in captured.err


def test_a_missing_extra_raised_inside_a_check_is_not_run(monkeypatch, capsys):
    from fedtheory.errors import MissingExtraError  # noqa: PLC0415

    def needs_it(ctx):
        raise MissingExtraError("claim Z9 needs the optional extra 'nn': pip install x", "nn")

    all_claims()
    monkeypatch.setitem(REGISTRY, "Z9", Claim("Z9", "test", "needs an extra", needs_it))
    assert main(["verify", "--only", "Z9"]) == 0
    out = capsys.readouterr().out
    assert "Not run here" in out and "not run: claim Z9 needs" in out and "CRASHED" not in out
    assert "1 not run" in out


def test_a_thorough_tier_claim_is_not_run_in_the_quick_tier(monkeypatch):
    ran = []

    def heavy(ctx):
        ran.append(ctx.tier)
        return judge(True, 1.0, criterion="x", **EX)

    all_claims()
    monkeypatch.setitem(REGISTRY, "Z8", Claim("Z8", "test", "heavy", heavy, tier="full"))
    (r,) = run("Z8", Context())
    assert r.verdict == NOT_RUN and r.skipped and not r.crashed and not ran
    assert "fedtheory verify --full --only Z8" in r.reason
    (r,) = run("Z8", Context(tier="full"))
    assert r.verdict == HOLDS and ran == ["full"]


def test_fedtheory_nn_without_the_extra_is_one_line_and_exit_two(monkeypatch, capsys):
    _block_mnist1d(monkeypatch)
    assert main(["nn", "--rounds", "1", "--seeds", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'fedtheory[nn]'" in err[0]


def test_figures_without_the_extra_draw_the_others_and_exit_two(monkeypatch, tmp_path, capsys):
    _block_mnist1d(monkeypatch)
    assert main(["figures", "participation", "nn_n1", "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert (tmp_path / "participation.png").exists() and not (tmp_path / "nn_n1.png").exists()
    assert [line for line in err if "nn_n1" in line] == err[-1:]
    assert "pip install 'fedtheory[nn]'" in err[-1] and "Traceback" not in captured.err


def test_an_undeclared_regime_is_refused_before_any_claim_runs(capsys, monkeypatch):
    """``--only C2/bogus`` used to run all of C2 (86 s) before refusing the regime: the regimes a
    claim reports are declared where it is registered, and checked against the selection."""

    def never(*a, **k):
        raise AssertionError("a claim ran")

    monkeypatch.setattr("fedtheory.verify.runner.run_claim", never)
    for only, says in (
        ("C2/bogus", "unknown regime C2/bogus: C2 reports C2/full, C2/uniform, C2/arbitrary"),
        ("G1/ring", "G1 reports only G1 (no regimes)"),
        ("C1/Uniform,C2/unifrom", "did you mean 'uniform'?"),
    ):
        assert main(["verify", "--only", only]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and says in err[0], err


def test_a_claim_reporting_an_undeclared_regime_is_a_crash(extra_claims, monkeypatch):
    monkeypatch.setitem(
        REGISTRY, "Z3", Claim("Z3", "test", "declares only a", _regimes, regimes=("a",))
    )
    (r,) = run(only="Z3", quiet=True)
    assert r.crashed and "reported regime(s) b that its registration does not declare" in r.error


@pytest.mark.parametrize("cid", ["F3", "C4"])
def test_a_cheap_claim_reports_exactly_its_declared_regimes(cid):
    """Every run checks that reported regimes are declared (else a crash); here, for claims
    cheap enough for a unit test, that every declared regime is reported too."""
    results = run(only=cid, quiet=True)
    assert all(r.ran for r in results)
    assert [r.id for r in results] == [f"{cid}/{x}" for x in REGISTRY[cid].regimes]


def test_declared_regimes_are_the_rows_of_the_last_catalog_run():
    """The quick tier's rows in docs/verdicts.md (generated by ``fedtheory verify --markdown``)
    are the declared regimes of each claim that reports some (a table cell wraps a long id: its
    first line is compared)."""
    page = (Path(__file__).parents[2] / "docs" / "verdicts.md").read_text()
    rows = [line.split("|")[0].strip() for line in page.splitlines() if "|" in line]
    shown = [r for r in rows if "/" in r and r.split("/")[0] in REGISTRY]
    for c in all_claims():
        if c.id.startswith("Z") or not c.runs_in(QUICK) or c.needs:
            continue
        mine = [r for r in shown if r.split("/")[0] == c.id]
        want = [f"{c.id}/{x}" for x in c.regimes]
        assert len(mine) == len(want), c.id
        assert all(w.startswith(m) for m, w in zip(mine, want, strict=True)), (c.id, mine, want)


def test_the_table_says_why_a_row_is_inconclusive(extra_claims, capsys):
    """A decision its fresh seeds do not reproduce reads, in the printed table, with the fresh
    estimate and the reason next to the measurement."""
    assert main(["verify", "--only", "Z9", "--json", "-"]) == 0
    (z9,) = json.loads(capsys.readouterr().out)["results"]
    assert z9["verdict"] == INCONCLUSIVE and "fresh-seed check" in z9["reason"]
    (r,) = run("Z9")
    cell = measured_cell(r)
    assert "on fresh seeds after the stop: 6.7 [-11.8, 25.2] rounds" in cell
    assert cell.endswith(f"inconclusive: {r.reason}")
    assert main(["verify", "--only", "Z9"]) == 0
    assert "inconclusive:" in capsys.readouterr().out  # the wrapped table shows it
