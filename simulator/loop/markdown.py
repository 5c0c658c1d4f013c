"""A proposal as Markdown, for reading in a review (the YAML beside it is what `try` applies)."""

from __future__ import annotations

__all__ = ["proposal_diff", "proposal_markdown"]

from pathlib import Path

from simulator.config.yamlfile import YAMLProblem, read_text_file
from simulator.errors import UserError
from simulator.loop.proposal import Proposal, apply_edits, prompt_diff


def proposal_diff(proposal: Proposal, prompt: str | None = None) -> str:
    """The unified diff of a chat bot's prompt that the proposal's edits make; "" when there is none."""
    change = proposal.change
    if change is None or not change.edits:
        return ""
    if change.kind == "tool_description":
        before = proposal.tool_description or ""
        try:
            return prompt_diff(
                before, apply_edits(before, change.edits, "the tool description"), "decision_tool"
            )
        except UserError as exc:
            return f"(the edits do not apply to the tool description: {exc})"
    if prompt is None and proposal.prompt_file:
        try:
            prompt = read_text_file(Path(proposal.prompt_file))
        except YAMLProblem:
            return ""
    if prompt is None:
        return ""
    try:
        after = apply_edits(prompt, change.edits)
    except UserError as exc:
        return f"(the edits do not apply to the prompt as it is now: {exc})"
    return prompt_diff(prompt, after, Path(proposal.prompt_file or "prompt").name)


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.splitlines() or [""])


def proposal_markdown(proposal: Proposal, diff: str = "") -> str:
    """The proposal for a reader: what failed, where, the evidence, the change, what it might break."""
    p = proposal
    out = [
        f"# Proposal {p.id}",
        "",
        f"- run: `{p.run_id}` ({p.run}) · bot: `{p.bot}` · written by: {p.author}",
        f"- criterion: **{p.criterion_id}** ({p.severity or 'no severity'}): {p.criterion_text}",
        f"- group: {p.group} — scenarios {', '.join(p.scenarios)}; failing: {', '.join(p.failing_scenarios)}",
        f"- failures: {p.failures}",
    ]
    if p.hazards:
        out.append(f"- hazards: {', '.join(p.hazards)}")
    if p.status == "error":
        out += ["", "## Error: no change proposed", "", p.error or "", ""]
        if p.raw_output:
            out += ["The model answered:", "", "```", p.raw_output, "```"]
        return "\n".join(out) + "\n"
    change = p.change
    if change is not None:
        out += ["", f"## Change ({change.kind})", "", change.summary]
        for label, value in (
            ("Question", change.question),
            ("Where", change.where),
            ("Condition", change.condition),
        ):
            if value:
                out.append(f"- {label}: {value}")
        if change.rationale:
            out.append(f"- Why: {change.rationale}")
        if diff:
            out += ["", "```diff", diff.rstrip("\n"), "```"]
    if p.missing_facts:
        out += ["", "## Never asked for", "", *(f"- {fact}" for fact in p.missing_facts)]
    out += ["", "## Evidence", ""]
    for item in p.evidence:
        mark = "verified" if item.verified else "NOT verified"
        out += [f"- `{item.conversation_id}` ({item.source}, {mark}) {item.note}", _quote(item.quote), ""]
    if p.at_risk:
        out += ["## Might put at risk", "", *(f"- {r.criterion}: {r.why}" for r in p.at_risk)]
    return "\n".join(out) + "\n"
