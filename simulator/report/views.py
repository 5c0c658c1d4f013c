"""Terminal views of a comparison of two runs and of a judge calibration."""

from __future__ import annotations

__all__ = ["render_calibration", "render_comparison", "render_gate", "render_panel"]

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from simulator.analysis.agreement import Panel
from simulator.analysis.calibrate import LABELS, Calibration, CriterionCalibration
from simulator.analysis.compare import PairedMetric, RunComparison
from simulator.plural import plural
from simulator.report.calibration_view import criterion_tables
from simulator.report.draw_terminal import draw_table
from simulator.report.gate import GateResult
from simulator.report.section import Cell, Column, text
from simulator.report.section import Table as SectionTable
from simulator.report.table_print import print_table
from simulator.stats.rates import pct
from simulator.visible import terminal_console


def _signed(x: float) -> str:
    return f"{100 * x:+.1f} pts"


def _golden(console: Console, comparison: RunComparison) -> None:
    golden = comparison.golden
    if golden is None:
        return
    title = "Golden items, side by side (the verdict decides; similarity scores gate nothing)"
    draw_table(console, _side_by_side(title, "scorer", [(r.name, r.a, r.b) for r in golden.metrics]))
    intents = [
        (d.intent, text(d.a, "fail" if d.a_zero else None), text(d.b, "fail" if d.b_zero else None))
        for d in golden.intents
    ]
    draw_table(console, _side_by_side("Verdict by intent (red: a row of zeros)", "intent", intents))


def _side_by_side(title: str, first: str, rows: Sequence[Sequence[str | Cell]]) -> SectionTable:
    """A table of A beside B, one row per thing compared."""
    table = SectionTable([Column(first), Column("A"), Column("B")], title=title)
    for row in rows:
        table.add(*row)
    return table


def _config_differences(console: Console, comparison: RunComparison) -> None:
    """The settings that differ between the runs: anything besides the change under test confounds it."""
    if comparison.config_differences:
        title = "Configuration differences (anything here besides your change confounds the comparison)"
        rows = [(d.key, d.a, d.b) for d in comparison.config_differences]
        draw_table(console, _side_by_side(title, "setting", rows))
    else:
        console.print("[yellow]no configuration differences recorded: both runs used the same settings[/]")


def _paired_metric(console: Console, m: PairedMetric) -> None:
    """One metric's paired result: the verdict, the pair counts, the rates and the scenario-level tests."""
    style = {"worse": "bold red", "better": "green"}.get(m.change, "dim")
    name = ("[bold]" + escape(m.name) + "[/]") if m.critical else escape(m.name)
    excluded = f" (+{m.excluded} with an error or no verdict on a side)" if m.excluded else ""
    if m.pairs == 0:
        console.print(
            f"{name}  [yellow]no pairs[/]: no conversation has a pass or fail on both sides"
            f"{excluded}; nothing to compare"
        )
        return
    change = m.change.upper() if m.change != "no significant change" else m.change
    console.print(
        f"{name}  [{style}]{change}[/]\n"
        f"  {m.pairs} pairs{excluded} · both pass {m.both_pass} · both fail {m.both_fail} · "
        f"A only {m.only_a} · B only {m.only_b} · per-conversation p={m.p_value:.3g}\n"
        f"  A {escape(m.a_rate.short)} → B {escape(m.b_rate.short)}\n"
        f"  difference {_signed(m.diff)} (95% CI over {plural(m.scenarios, 'vignette')} {_signed(m.diff_low)} to "
        f"{_signed(m.diff_high)})\n"
        f"  vignettes: {m.scenarios_worse} worse, {m.scenarios_better} better of {m.scenarios} · "
        f"clustered McNemar p={m.clustered_p_value:.3g} · sign test p={m.sign_p_value:.3g}\n"
        f"  [dim]{escape(m.power_note)}[/]"
        + (f"\n  [yellow]{escape(m.interval_note)}[/]" if m.interval_note else "")
    )


def _scenario_moves(console: Console, comparison: RunComparison) -> None:
    """The mean per-scenario difference, and a table of the scenarios whose pass rate moved."""
    if comparison.scenario_diff is not None:
        console.print(
            f"per-scenario pass rates: mean difference {_signed(comparison.scenario_diff)} (95% CI "
            f"{_signed(comparison.scenario_diff_low or 0.0)} to {_signed(comparison.scenario_diff_high or 0.0)})"
        )
    moved = [s for s in comparison.scenarios if s.diff]
    if moved:
        table = Table(title="Scenarios whose pass rate moved", title_justify="left")
        for name in ("scenario", "A", "B", "difference"):
            table.add_column(name)
        for s in sorted(moved, key=lambda s: s.diff or 0.0):
            table.add_row(escape(s.scenario_id), escape(s.a.short), escape(s.b.short), _signed(s.diff or 0.0))
        print_table(console, table)


def _flips(console: Console, comparison: RunComparison, max_flips: int) -> None:
    """Per metric, the conversations that flipped, with B's judge reasoning and evidence."""
    for m in comparison.metrics:
        if not m.flips or m.name == "conversation passes":
            continue
        console.print(f"\n[bold]{escape(m.name)}[/]: {len(m.flips)} flipped")
        for flip in m.flips[:max_flips]:
            colour = "red" if flip.direction == "regression" else "green"
            console.print(
                f"  [{colour}]{flip.direction:11}[/] {escape(flip.conversation_id)}: "
                f"{escape(flip.a_result)} → {escape(flip.b_result)}"
            )
            if flip.b_reasoning:
                console.print(f"      B judge: {escape(flip.b_reasoning[:200])}")
            for quote in flip.b_evidence[:3]:
                console.print(f'      B evidence: "{escape(quote[:160])}"')
        if len(m.flips) > max_flips:
            console.print(f"  … {len(m.flips) - max_flips} more (use --max-flips)")


def render_comparison(comparison: RunComparison, console: Console | None = None, max_flips: int = 10) -> None:
    """Print the configuration differences first (a confounded comparison must be visible), then each metric."""
    console = console or terminal_console()
    console.rule("[bold]compare[/]")  # the paths on their own lines: a rule would cut them short
    console.print(
        f"A (baseline)  {escape(comparison.a)}\nB (candidate) {escape(comparison.b)}", overflow="fold"
    )
    if comparison.same_folder:
        console.print(f"[yellow]{escape(comparison.same_folder)}[/]")
    console.print(
        f"{plural(comparison.matched, 'conversation')} matched on (scenario, repeat) over {plural(comparison.vignettes, 'vignette')}; "
        f"only in A: {len(comparison.only_in_a)}, "
        f"only in B: {len(comparison.only_in_b)}"
    )
    _config_differences(console, comparison)
    if comparison.outcome_source:
        a, b = (", ".join(s) for s in comparison.outcome_source)
        same = a == b
        console.print(f"outcome figures read from: {a}" if same else f"outcome figures read from: A {a}; B {b}"
                      " [yellow](different sources: a difference may be the reading, not the bot)[/]")  # fmt: skip
    _golden(console, comparison)
    console.print(
        "\n[bold]Paired results[/]: B minus A on the same conversations. The verdict is decided over "
        "vignettes (clustered McNemar; exact sign test beside it), since repeats and variants of a vignette "
        "are not independent; the per-conversation McNemar p is for reference. The 95% CI of each difference "
        "is a bootstrap over vignettes (all conversations of a vignette resampled together), like the verdict; "
        "[bold]bold[/] = critical"
    )
    for m in comparison.metrics:
        _paired_metric(console, m)
    _scenario_moves(console, comparison)
    _flips(console, comparison, max_flips)
    if comparison.regressions:
        console.print("\n[bold red]Significant regressions on critical metrics:[/]")
        for line in comparison.regressions:
            console.print(f"  [red]{escape(line)}[/]")
    else:
        where = " where there was enough to compare" if comparison.undecided else ""
        console.print(f"\nno critical metric got significantly worse{where} (alpha {comparison.alpha})")
    if comparison.undecided:
        console.print("\n[yellow]Critical metrics with too little to compare (undecidable):[/]")
        for line in comparison.undecided:
            console.print(f"  [yellow]{escape(line)}[/]")


def _calibration_block(console: Console, c: CriterionCalibration) -> None:
    false_pass = escape(c.false_pass.short)
    kappa = "n/a" if c.kappa is None else f"{c.kappa:.2f}"
    kappa += f" ({c.kappa_note})" if c.kappa_note else ""
    macro = "n/a" if c.macro_f1 is None else f"{c.macro_f1:.2f}"
    console.print(
        f"[bold]{escape(c.criterion_id)}[/]\n"
        f"  false pass (human fail, judge pass): {'[red]' + false_pass + '[/]' if c.false_pass.k else false_pass}\n"
        f"  false fail (human pass, judge fail): {escape(c.false_fail.short)}\n"
        f"  raw agreement {escape(c.agreement.short)} · kappa {kappa} · macro-F1 {macro}\n"
        f"  compared {c.compared} · no verdict {c.no_verdict} · judge error or not judged {c.judge_errors}"
    )


def _heading(console: Console, run_id: str, labels_file: str) -> None:
    """The command's rule, then the run and the labels on a line of their own (a rule would cut a path)."""
    console.rule("[bold]calibrate[/]")
    console.print(f"run {escape(run_id)} with {escape(labels_file)}", overflow="fold")


def render_calibration(calibration: Calibration, console: Console | None = None) -> None:
    """Print per-criterion agreement, false passes first, then each confusion matrix and the disagreements."""
    console = console or terminal_console()
    _heading(console, calibration.run_id, calibration.labels_file)
    console.print(f"judge set {escape(calibration.judge_set or '–')}")
    for c in calibration.criteria:
        _calibration_block(console, c)
    if calibration.overall is not None:
        _calibration_block(console, calibration.overall)
    for c in calibration.criteria:
        title = f"{c.criterion_id}: human (rows) × judge (columns)"
        matrix = SectionTable(
            [Column("human"), *(Column(label, numeric=True) for label in LABELS)], title=title
        )
        for human in LABELS:
            matrix.add(human, *[str(c.matrix[human][judge]) for judge in LABELS])
        draw_table(console, matrix)
        for d in c.disagreements[:10]:
            colour = "red" if d.human == "fail" and d.judge == "pass" else "yellow"
            console.print(
                f"  [{colour}]human {d.human}, judge {d.judge}[/] {escape(d.conversation_id)}: "
                f"{escape(d.reasoning[:200])}"
            )
    if calibration.unknown_conversations:
        console.print(
            f"[yellow]labels for conversations not in this run: {', '.join(calibration.unknown_conversations)}[/]"
        )
    leaky = [c for c in calibration.criteria if c.false_pass.k]
    if leaky:
        worst = max(leaky, key=lambda c: c.false_pass.rate or 0.0)
        console.print(
            f"[red]false passes hide real failures: {escape(worst.criterion_id)} passed "
            f"{escape(worst.false_pass.short)} of the conversations the human failed; read those transcripts "
            "and tighten the rubric[/]"
        )


def render_panel(calibration: Panel, console: Console | None = None) -> None:
    """Print, per criterion, the judge against each labeller and the labellers against each other: false
    passes first, then agreement, Cohen's kappa and macro-F1 (the desk's calibration page shows the same)."""
    console = console or terminal_console()
    _heading(console, calibration.run_id, calibration.labels_file)
    console.print(
        f"judge set {escape(calibration.judge_set or '–')} · labellers: {escape(', '.join(calibration.labellers))}"
    )
    console.print(
        "false pass: the reference said fail and the rater pass, over the reference's fails; n/a is a label "
        "like pass and fail; error and not-judged verdicts are left out"
    )
    for c in calibration.criteria:
        console.print(f"\n[bold]{escape(c.criterion_id)}[/] · {c.items} labelled items")
        for table in criterion_tables(c):
            draw_table(console, table)


_GATE_STYLE = {"met": "green", "not met": "bold red", "undecidable": "yellow"}


def render_gate(result: GateResult, console: Console | None = None) -> None:
    """One line per requirement (status, the bound it was judged on, what would decide it), then the verdict.

    Lines are not wrapped (soft wrap), so CI logs keep one requirement per line.
    """
    console = console or terminal_console(soft_wrap=True)
    for item in result.results:
        style = _GATE_STYLE[item.status]
        console.print(
            f"[{style}]{item.status.upper():11}[/] {escape(item.requirement.text)}: {escape(item.reason)}"
        )
        if item.baseline is not None and item.baseline.rate is not None:
            cl = item.baseline.clustered
            where = f", clustered {pct(cl.low)}–{pct(cl.high)}" if cl is not None else ""
            console.print(
                f"            baseline {item.baseline.k}/{item.baseline.n} = {pct(item.baseline.rate)}{where}"
            )
        if item.advice:
            console.print(f"            [dim]{escape(item.advice)}[/]")
    if result.outcome_source and result.outcome_source != ["state"]:  # the default goes unsaid, as before
        console.print(f"outcome metrics read from: {', '.join(result.outcome_source)}")
    for gap in result.incomplete:
        console.print(f"[yellow]INCOMPLETE[/]  {escape(gap)}")
    verdict = {0: "gate met", 1: "gate NOT met", 3: "gate undecidable"}[result.exit_code]
    partial = (
        " on incomplete records: the rates leave out what they lack (above)" if result.incomplete else ""
    )
    console.print(f"[bold]{verdict}[/] (exit {result.exit_code}){partial}")
