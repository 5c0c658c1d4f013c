"""The page of a printable derived document (safety case, history): A4 print rules, no script, no external
resource. Its sections are drawn by the report's one HTML renderer (draw_html.py)."""

from __future__ import annotations

__all__ = ["document"]

from html import escape

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
tr.st-ok td:last-child { background: #dff3e4; } tr.st-warn td:last-child { background: #fff1cc; }
tr.st-fail td:last-child { background: #f9d6d5; font-weight: 600; }
tr.details td { border-top: none; color: #333; font-size: 8.2pt; background: #fafbfc; }
tr.details p { margin: 0 0 1mm; }
p.note, p.warning { margin: 0 0 1.5mm; }
.matrix td, .matrix th { text-align: center; width: 16%; height: 11mm; }
.matrix .acceptable { background: #dff3e4; } .matrix .undesirable { background: #fff1cc; }
.matrix .unacceptable { background: #f9d6d5; }
.matrix .initial { color: #777; font-size: 7.5pt; } .matrix .residual { font-weight: 700; font-size: 8pt; }
.matrix .rating { color: #555; font-size: 7pt; }
.legend { font-size: 8pt; color: #555; }
.signature { border: 0.3mm solid #c9ced6; padding: 3mm; margin-top: 6mm; break-inside: avoid; }
svg { max-width: 100%; height: auto; }
@media print { body { padding: 0; max-width: none; } a { color: inherit; text-decoration: none; } }
"""


def document(title: str, meta: str, body: str, extra_css: str = "") -> str:
    """A whole standalone page (no script, no external resource)."""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{PRINT_CSS}{extra_css}</style></head><body>"
        f'<h1>{escape(title)}</h1><p class="meta">{escape(meta)}</p>{body}</body></html>\n'
    )
