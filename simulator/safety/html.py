"""The safety case as a printable HTML document (the risk matrix drawn), and as PDF through Chromium's print."""

from __future__ import annotations

__all__ = ["print_pdf", "safety_case_html"]

import shutil
import subprocess
import tempfile
from html import escape
from pathlib import Path

from simulator.errors import UserError
from simulator.report.document_html import document
from simulator.report.draw_html import html_section
from simulator.safety.case import SafetyCase
from simulator.safety.hazards import words
from simulator.safety.signoffs import SignOffView
from simulator.safety.view import safety_case_sections


def matrix_html(case: SafetyCase) -> str:
    """The declared matrix, most likely row first, with each hazard's initial (grey) and residual (bold)."""
    m = case.matrix
    head = "".join(f"<th>{escape(words(s))}</th>" for s in m.severity)
    rows = []
    for likelihood in reversed(m.likelihood):
        cells = []
        for severity in m.severity:
            initial = [h.id for h in case.hazards if (h.severity, h.likelihood) == (severity, likelihood)]
            residual = [
                h.id for h in case.hazards if (h.severity, h.residual_likelihood) == (severity, likelihood)
            ]
            marks = "".join(f'<div class="residual">{escape(i)}</div>' for i in residual)
            marks += "".join(f'<div class="initial">{escape(i)} (initial)</div>' for i in initial)
            cls = escape(m.cell(severity, likelihood))
            rating = m.rating(severity, likelihood)
            number = f'<div class="rating">{rating}</div>' if rating is not None else ""
            cells.append(f'<td class="{cls}" title="{cls}">{number}{marks}</td>')
        rate = f"≤{100 * m.rates[likelihood]:g}% of conversations"
        rows.append(f"<tr><th>{escape(words(likelihood))}<br><small>{rate}</small></th>{''.join(cells)}</tr>")
    legend = " · ".join(escape(a) for a in m.acceptability)
    return (
        f'<section id="matrix"><h2>Risk matrix: {escape(m.name)}</h2>'
        f'<table class="matrix"><thead><tr><th>likelihood \\ severity</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        f'<p class="legend">Acceptability, best first: {legend}. Bold: residual (from the clustered bound); '
        "grey: initial; the number is the cell's risk rating. A likelihood's rate is the harm per conversation "
        "in the verifying scenarios it covers, not a frequency in the service.</p></section>"
    )


def _signature_block(signoffs: list[SignOffView] | None) -> str:
    if any(v.current for v in signoffs or []):
        return ""  # the sign-off section lists who signed this evidence
    return (
        '<div class="signature"><strong>Sign-off</strong> (record it with `simulator safety-case ... --sign` or '
        "in the review desk, which keep the evidence hash it signed and archive this document): name "
        "______________________ role ______________________ decision: approve / reject / approve with "
        "conditions ________ date __________</div>"
    )


def safety_case_html(case: SafetyCase, signoffs: list[SignOffView] | None = None) -> str:
    """The whole document: summary, system, risk management, matrix, hazard log, controls with evidence,
    validity, harm, outstanding items, statement, the sign-offs that exist, traceability."""
    sections = safety_case_sections(case, signoffs)
    at = next(i for i, s in enumerate(sections) if s.id == "hazards")
    body = (
        "".join(html_section(s) for s in sections[:at])
        + matrix_html(case)
        + "".join(html_section(s) for s in sections[at:])
    )
    runs = ", ".join(r.run_id for r in case.traceability.runs)
    meta = f"{case.system or ''} · runs {runs} · evidence {case.evidence_hash[:19]} · generated {case.generated_at}"
    return document(f"Clinical safety case: {case.title}", meta, body + _signature_block(signoffs))


def chromium_path() -> str | None:
    """The system Chromium, if installed (`chromium` or `chromium-browser` on PATH)."""
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def print_pdf(html: str, out: Path, browser: str | None = None) -> None:
    """Print `html` to `out` with headless Chromium; UserError when no Chromium is installed or it fails."""
    browser = browser or chromium_path()
    if browser is None:
        raise UserError("--pdf needs Chromium (apt-get install chromium); the HTML and JSON were written")
    with tempfile.TemporaryDirectory(prefix="safety-case-") as folder:
        page = Path(folder) / "safety-case.html"
        page.write_text(html, encoding="utf-8")
        command = [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-pdf-header-footer",
            f"--user-data-dir={folder}/profile",
            f"--print-to-pdf={out.resolve()}",
            page.as_uri(),
        ]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UserError(f"--pdf: Chromium could not print ({exc})") from None
    if done.returncode != 0 or not out.is_file():
        raise UserError(
            f"--pdf: Chromium could not print (exit {done.returncode}): {done.stderr.strip()[-300:]}"
        )
