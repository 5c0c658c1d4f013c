"""Sections (report/sections.py) drawn as printable HTML: escaped, no script, A4 print rules."""

from __future__ import annotations

__all__ = ["PRINT_CSS", "document", "section_html"]

from html import escape

from simulator.report.doc_sections import Section

PRINT_CSS = """
@page { size: A4; margin: 14mm 12mm 16mm 12mm; }
* { box-sizing: border-box; }
body { font: 10.5pt/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1f24;
       margin: 0 auto; max-width: 190mm; padding: 8mm 0; }
h1 { font-size: 17pt; margin: 0 0 2mm; } h2 { font-size: 12.5pt; margin: 7mm 0 2mm; break-after: avoid; }
p.meta { color: #555; margin: 0 0 4mm; font-size: 9pt; }
table { border-collapse: collapse; width: 100%; margin: 1mm 0 3mm; font-size: 8.6pt; }
th, td { border: 0.3mm solid #c9ced6; padding: 1.2mm 1.6mm; text-align: left; vertical-align: top;
         overflow-wrap: break-word; }
th { background: #eef1f5; } thead { display: table-header-group; }
tr { break-inside: avoid; }
tr.ok td:last-child { background: #dff3e4; } tr.warn td:last-child { background: #fff1cc; }
tr.fail td:last-child { background: #f9d6d5; font-weight: 600; }
tr.details td { border-top: none; color: #333; font-size: 8.2pt; background: #fafbfc; }
tr.details p { margin: 0 0 1mm; }
.notes p { margin: 0 0 1.5mm; }
.matrix td, .matrix th { text-align: center; width: 16%; height: 11mm; }
.matrix .acceptable { background: #dff3e4; } .matrix .undesirable { background: #fff1cc; }
.matrix .unacceptable { background: #f9d6d5; }
.matrix .initial { color: #777; font-size: 7.5pt; } .matrix .residual { font-weight: 700; font-size: 8pt; }
.legend { font-size: 8pt; color: #555; }
.signature { border: 0.3mm solid #c9ced6; padding: 3mm; margin-top: 6mm; break-inside: avoid; }
svg { max-width: 100%; height: auto; }
@media print { body { padding: 0; max-width: none; } a { color: inherit; text-decoration: none; } }
"""


def section_html(section: Section) -> str:
    """One section: its heading, notes and table (every text escaped)."""
    out = [f'<section id="{escape(section.id)}"><h2>{escape(section.title)}</h2>']
    if section.notes:
        out.append('<div class="notes">' + "".join(f"<p>{escape(n)}</p>" for n in section.notes) + "</div>")
    if section.columns:
        head = "".join(f"<th>{escape(c)}</th>" for c in section.columns)
        out.append(f"<table><thead><tr>{head}</tr></thead><tbody>")
        for row in section.rows:
            cells = "".join(f"<td>{escape(c)}</td>" for c in row.cells)
            out.append(f'<tr class="{row.state}">{cells}</tr>')
            if row.details:
                body = "".join(f"<p>{escape(d)}</p>" for d in row.details)
                out.append(f'<tr class="details"><td colspan="{len(section.columns)}">{body}</td></tr>')
        out.append("</tbody></table>")
    out.append("</section>")
    return "".join(out)


def document(title: str, meta: str, body: str, extra_css: str = "") -> str:
    """A whole standalone page (no script, no external resource)."""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{PRINT_CSS}{extra_css}</style></head><body>"
        f'<h1>{escape(title)}</h1><p class="meta">{escape(meta)}</p>{body}</body></html>\n'
    )
