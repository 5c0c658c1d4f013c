"""The meta-evaluation in the terminal: per criterion and per category, the judge against each labeller and
the labellers against each other; critical criteria with false passes first."""

from __future__ import annotations

__all__ = ["render_meta_evaluation"]

from rich.console import Console

from simulator.analysis.meta_eval import MetaEvaluation, MetaGroup
from simulator.report.draw_terminal import draw_table
from simulator.report.section import Cell, Column, Table
from simulator.visible import terminal_console
from simulator.visible import visible_markup as escape

_HEADERS = ("rater", "against", "compared", "macro-F1", "kappa", "false passes", "left out")


def _group_table(group: MetaGroup) -> Table:
    """One row per (rater, reference); drawn by the report's renderer, so intervals are never cut at 80
    columns."""
    title = f"{group.kind} {group.name}" + (f" ({group.severity})" if group.severity else "")
    numeric = ("compared", "left out")
    table = Table(
        [Column(n, numeric=n in numeric) for n in _HEADERS], title=f"{title}: {group.items} labelled items"
    )
    for row in [*group.judge, *group.humans]:
        false_pass = f"{row.false_passes}/{row.reference_fails} {row.false_pass.short}"
        table.add(
            Cell(row.rater, strong=row.rater == "judge"), row.reference, str(row.compared), row.macro_f1.short,
            row.kappa.short, Cell(false_pass, "fail" if row.false_passes else None), str(row.left_out),
        )  # fmt: skip
    return table


def _summary(console: Console, group: MetaGroup) -> None:
    console.print(
        f"  judge macro-F1 {group.judge_macro_f1.short} · labellers against each other "
        f"{group.human_macro_f1.short} · judge percentile among labellers {group.judge_percentile.short}"
    )
    for row in [*group.judge, *group.humans]:  # a kappa of 0 beside 90% agreement says why
        if row.kappa_note:
            console.print(
                f"  kappa of {escape(row.rater)} against {escape(row.reference)}: {escape(row.kappa_note)}"
            )


def render_meta_evaluation(result: MetaEvaluation, console: Console | None = None) -> None:
    """Print every group; intervals are 95% bootstrap intervals over conversations clustered by scenario."""
    console = console or terminal_console()
    console.rule("[bold]meta-evaluation[/]")  # the run on a line of its own: a rule would cut it short
    console.print(f"run {escape(result.run_id)} · judge set {escape(result.judge_set)}", overflow="fold")
    console.print(
        f"labellers: {escape(', '.join(result.labellers))} · {result.replicates} bootstrap replicates "
        "(conversations clustered by scenario) · n/a is a label like pass and fail; items without a judge "
        "label are left out"
    )
    if result.unknown_conversations:
        console.print(
            f"[yellow]labels for conversations not in this run:[/] {escape(', '.join(result.unknown_conversations))}"
        )
    for group in [*result.criteria, *result.categories]:
        console.print()
        draw_table(console, _group_table(group))
        _summary(console, group)
