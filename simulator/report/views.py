"""Terminal views of a comparison of two runs and of a judge calibration."""

from __future__ import annotations

__all__ = ["render_calibration", "render_comparison"]

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from simulator.analysis.calibrate import LABELS, Calibration, CriterionCalibration
from simulator.analysis.compare import Comparison
from simulator.report.terminal import print_table


def _signed(x: float) -> str:
    return f"{100 * x:+.1f} pts"


def render_comparison(comparison: Comparison, console: Console | None = None, max_flips: int = 10) -> None:
    """Print the configuration differences first (a confounded comparison must be visible), then each metric."""
    console = console or Console()
    console.rule("[bold]compare[/]")  # the paths on their own lines: a rule would cut them short
    console.print(
        f"A (baseline)  {escape(comparison.a)}\nB (candidate) {escape(comparison.b)}", overflow="fold"
    )
    console.print(
        f"{comparison.matched} conversations matched on (scenario, repeat); only in A: {len(comparison.only_in_a)}, "
        f"only in B: {len(comparison.only_in_b)}"
    )
    if comparison.config_differences:
        table = Table(
            title="Configuration differences (anything here besides your change confounds the comparison)",
            title_justify="left",
        )
        for name in ("setting", "A", "B"):
            table.add_column(name)
        for diff in comparison.config_differences:
            table.add_row(escape(diff.key), escape(diff.a), escape(diff.b))
        print_table(console, table)
    else:
        console.print("[yellow]no configuration differences recorded: both runs used the same settings[/]")
    console.print(
        "\n[bold]Paired results[/]: B minus A on the same conversations, McNemar exact p, paired bootstrap "
        "95% CI; [bold]bold[/] = critical"
    )
    for m in comparison.metrics:
        style = {"worse": "bold red", "better": "green"}.get(m.change, "dim")
        name = ("[bold]" + escape(m.name) + "[/]") if m.critical else escape(m.name)
        excluded = f" (+{m.excluded} with an error or no verdict on a side)" if m.excluded else ""
        if m.pairs == 0:
            console.print(
                f"{name}  [yellow]no pairs[/]: no conversation has a pass or fail on both sides"
                f"{excluded}; nothing to compare"
            )
            continue
        change = m.change.upper() if m.change != "no significant change" else m.change
        console.print(
            f"{name}  [{style}]{change}[/]\n"
            f"  {m.pairs} pairs{excluded} · both pass {m.both_pass} · both fail {m.both_fail} · "
            f"A only {m.only_a} · B only {m.only_b} · p={m.p_value:.3g}\n"
            f"  A {escape(m.a_rate.short)} → B {escape(m.b_rate.short)}\n"
            f"  difference {_signed(m.diff)} (95% CI {_signed(m.diff_low)} to {_signed(m.diff_high)})"
        )
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
    if comparison.regressions:
        console.print("\n[bold red]Significant regressions on critical metrics:[/]")
        for line in comparison.regressions:
            console.print(f"  [red]{escape(line)}[/]")
    else:
        console.print(f"\nno critical metric got significantly worse (alpha {comparison.alpha})")


def _calibration_block(console: Console, c: CriterionCalibration) -> None:
    false_pass = escape(c.false_pass.short)
    kappa = "n/a (one label only)" if c.kappa is None else f"{c.kappa:.2f}"
    console.print(
        f"[bold]{escape(c.criterion_id)}[/]\n"
        f"  false pass (human fail, judge pass): {'[red]' + false_pass + '[/]' if c.false_pass.k else false_pass}\n"
        f"  false fail (human pass, judge fail): {escape(c.false_fail.short)}\n"
        f"  raw agreement {escape(c.agreement.short)} · kappa {kappa}\n"
        f"  compared {c.compared} · no verdict {c.no_verdict} · judge error or not judged {c.judge_errors}"
    )


def render_calibration(calibration: Calibration, console: Console | None = None) -> None:
    """Print per-criterion agreement, false passes first, then each confusion matrix and the disagreements."""
    console = console or Console()
    console.rule(f"[bold]calibrate[/] {escape(calibration.run_id)} with {escape(calibration.labels_file)}")
    console.print(f"judge set {escape(calibration.judge_set or '–')}")
    for c in calibration.criteria:
        _calibration_block(console, c)
    if calibration.overall is not None:
        _calibration_block(console, calibration.overall)
    for c in calibration.criteria:
        matrix = Table(
            title=f"{escape(c.criterion_id)}: human (rows) × judge (columns)", title_justify="left"
        )
        matrix.add_column("human")
        for label in LABELS:
            matrix.add_column(label, justify="right")
        for human in LABELS:
            matrix.add_row(human, *[str(c.matrix[human][judge]) for judge in LABELS])
        print_table(console, matrix)
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
