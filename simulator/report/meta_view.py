"""The meta-evaluation in the terminal: per criterion and per category, the judge against each labeller and
the labellers against each other; critical criteria with false passes first."""

from __future__ import annotations

__all__ = ["render_meta_evaluation"]

from rich.console import Console
from rich.table import Table

from simulator.analysis.meta_eval import MetaEvaluation, MetaGroup
from simulator.report.table_print import print_table
from simulator.report.visible import visible_markup as escape


def _group_table(group: MetaGroup) -> Table:
    title = f"{group.kind} {group.name}" + (f" ({group.severity})" if group.severity else "")
    table = Table(
        "rater", "against", "compared", "macro-F1", "kappa", "false passes", "left out",
        title=f"{title}: {group.items} labelled items",
    )  # fmt: skip
    for row in [*group.judge, *group.humans]:
        style = "bold" if row.rater == "judge" else ""
        false_pass = f"{row.false_passes}/{row.reference_fails} {row.false_pass.short}"
        table.add_row(
            f"[{style}]{escape(row.rater)}[/]" if style else escape(row.rater), escape(row.reference),
            str(row.compared), row.macro_f1.short, row.kappa.short,
            f"[red]{false_pass}[/]" if row.false_passes else false_pass, str(row.left_out),
        )  # fmt: skip
    return table


def _summary(console: Console, group: MetaGroup) -> None:
    console.print(
        f"  judge macro-F1 {group.judge_macro_f1.short} · labellers against each other "
        f"{group.human_macro_f1.short} · judge percentile among labellers {group.judge_percentile.short}"
    )


def render_meta_evaluation(result: MetaEvaluation, console: Console | None = None) -> None:
    """Print every group; intervals are 95% bootstrap intervals over conversations clustered by scenario."""
    console = console or Console()
    console.rule(f"[bold]meta-evaluation[/] {escape(result.run_id)} · judge set {result.judge_set}")
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
        print_table(console, _group_table(group))
        _summary(console, group)
