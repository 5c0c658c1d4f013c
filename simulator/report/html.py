"""The self-contained HTML report: summary, tables with interval plots, a filterable transcript viewer.

One file, no network: CSS and JS are inlined, a Content-Security-Policy allows only the report's own script
(by hash) and forbids every fetch (but, in a voice run's report, the players' audio files in the run
folder), and every string from a transcript or verdict is HTML-escaped.
"""

from __future__ import annotations

__all__ = ["render_html", "write_html"]

import base64
import hashlib
from importlib import resources
from pathlib import Path

from simulator.analysis.rundata import short_hash
from simulator.report.draw_html import html_sections
from simulator.report.html_parts import e, transcript_html
from simulator.report.model import Report
from simulator.report.sections import report_sections


def _asset(name: str) -> str:
    return resources.files("simulator.report").joinpath("assets", name).read_text(encoding="utf-8")


def _csp(script: str, audio: bool = False) -> str:
    """The report's policy; `audio`: a voice run's players may load the run folder's audio files."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        + ("media-src file:; " if audio else "")
        + f"script-src 'sha256-{digest}'; connect-src 'none'; form-action 'none'; base-uri 'none'"
    )


def _options(values: list[str]) -> str:
    return "".join(f'<option value="{e(v)}">{e(v)}</option>' for v in values)


def _transcripts(report: Report) -> str:
    criteria = sorted({v.criterion_id for t in report.transcripts for v in t.verdicts})
    tags = sorted({tag for t in report.transcripts for tag in t.tags})
    results = ["pass", "fail", "not_applicable", "error", "not_judged"]
    filters = (
        '<div class="filters">'
        f'<label>criterion <select id="f-criterion"><option value="">any</option>{_options(criteria)}</select></label>'
        f'<label>result <select id="f-result"><option value="">any</option>{_options(results)}</select></label>'
        f'<label>tag <select id="f-tag"><option value="">any</option>{_options(tags)}</select></label>'
        f'<label>conversation <select id="f-status"><option value="">any</option>'
        f"{_options(['pass', 'fail', 'error', 'not_judged'])}</select></label>"
        '<span id="shown"></span></div>'
    )
    audio_root = Path(report.run.path).resolve().as_uri() + "/"  # a voice call's audio, in the run folder
    body = "".join(transcript_html(i, t, audio_root) for i, t in enumerate(report.transcripts))
    return (
        '<section id="transcripts"><h2>Transcripts</h2><p class="note">Highlighted passages are the evidence '
        "judges quoted (red: quoted by a failing verdict); click a verdict to outline its passages. Quotes the "
        f"engine could not find in the transcript are marked NOT FOUND.</p>{_left_out(report)}{filters}{body}"
        "</section>"
    )


def _left_out(report: Report) -> str:
    """What the page does not carry in full, and how to read it (the run folder keeps everything)."""
    gone = report.transcripts_left_out
    if gone is None:
        return ""
    return (
        f'<p class="note"><strong>{gone.passing_left_out} passing conversations are not shown</strong>: this '
        f"page carries every failing, errored and undecided conversation and {gone.passing_shown} passing ones "
        f"(the first {gone.per_scenario} of each scenario). The run folder keeps them all: "
        f"<code>{e(gone.how_to_see)}</code>, or <code>simulator report --html FILE "
        "--passing-transcripts all</code>.</p>"
    )


# The navigation bar's names of the sections, in page order.
_NAV_NAMES = {
    "summary": "Summary",
    "golden": "Golden items",
    "outcome": "Outcome",
    "omissions": "Omissions",
    "criteria": "Criteria",
    "scenarios": "Scenarios",
    "stats": "Numbers that hold up",
    "simulated-user": "Simulated user",
    "simulators": "Simulators",
    "factors": "Factors",
    "redteam": "Red team",
    "relations": "Relations",
    "split": "Held-out",
    "health": "Run health",
    "voice": "Voice",
    "cost": "Cost &amp; latency",
    "judges": "Judges",
    "length": "Length",
    "transcripts": "Transcripts",
}


def render_html(report: Report, header: str = "", everything: bool = False) -> str:
    """The whole report as one HTML document: the summary (findings, critical rates) first, as in the
    terminal; `everything` lists the passing rows the tables otherwise collapse behind one line. `header`
    is trusted HTML put first in the body: the review desk's navigation when the desk serves the report
    (it is not escaped; never pass run data in it)."""
    script = _asset("report.js")
    run = report.run
    title = f"simulator report · {run.suite} · {run.run_id}"
    meta = (
        f"bot {run.bot} · user {run.user_model} · judge {run.judge_model or '–'} · {run.counted} · status {run.status} · judge set "
        f"{short_hash(run.judge_set)} · started {run.created_at:%Y-%m-%d %H:%M} UTC · generated "
        f"{report.generated_at:%Y-%m-%d %H:%M} UTC"
    )
    sections = [
        html_sections(report_sections(report, everything)),
        _transcripts(report),
    ]
    nav = "".join(
        f'<a href="#{i}">{n}</a>' for i, n in _NAV_NAMES.items() if f'<section id="{i}">' in "".join(sections)
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(_csp(script, report.analysis("voice") is not None))}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{_asset('report.css')}{_asset('parts.css')}</style></head><body>{header}"
        f'<header><h1>{e(title)}</h1><div class="meta">{e(meta)}</div></header><nav>{nav}</nav>'
        f"<main>{''.join(sections)}</main><script>{script}</script></body></html>"
    )


def write_html(report: Report, path: Path, everything: bool = False) -> None:
    """Write the HTML report to `path`."""
    path.write_text(render_html(report, everything=everything), encoding="utf-8")
