"""A pathway document as a clinical team writes it (Markdown or plain text), read into presentation cards.

    # Suspected stroke (FAST)
    hazard: HAZ-02
    tags: neuro, high-stakes
    complaint: feeling not right since lunch

    ## emergency
    - One side of the face droops.
    - Words come out slurred.

    ## context
    - Takes tablets for blood pressure.

A `## LEVEL` section (an outcome level of the suite) lists the red flags whose presence calls for that
disposition; `## context` lists facts any presentation may carry. Lines before the first section give the
title, the hazard the pathway controls, the tags of its vignettes and the complaint in the patient's words.
"""

from __future__ import annotations

__all__ = ["Pathway", "read_pathway"]

import re
from dataclasses import dataclass, field
from pathlib import Path

from simulator.config.yamlfile import MAX_FILE_BYTES
from simulator.errors import Problem, UserError
from simulator.readers import missing, read_text

_SETTING = re.compile(r"^(hazard|tags|complaint)\s*:\s*(.+)$", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.+)$")


@dataclass
class Pathway:
    """A pathway read from its document: red flags by disposition level, shared context facts."""

    file: str
    title: str
    hazard: str | None = None
    tags: list[str] = field(default_factory=list)
    complaint: str = ""
    flags: dict[str, list[str]] = field(default_factory=dict)  # level -> red flags, in the document's order
    context: list[str] = field(default_factory=list)


def read_pathway(path: Path, levels: list[str]) -> Pathway:
    """Read a pathway document; a section that names no outcome level of the suite, or a pathway with no
    red flag at all, is one UserError naming file and line."""
    if missing(path):
        raise UserError(f"{path}: no such pathway document; give a Markdown or text file")
    lines = read_text(path, MAX_FILE_BYTES, "split the pathway", "UTF-8 Markdown or text").splitlines()
    pathway = Pathway(file=str(path), title=path.stem)
    section: str | None = None
    problems: list[Problem] = []
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if line.startswith("## "):
            section = line[3:].strip().lower().replace(" ", "_")
            if section != "context" and section not in levels:
                message = (
                    f"section '{line[3:].strip()}' is not an outcome level ({', '.join(levels)}) nor context"
                )
                problems.append(Problem(str(path), message, number))
            continue
        if line.startswith("# "):
            pathway.title = line[2:].strip()
            continue
        setting = _SETTING.match(line)
        if section is None and setting:
            key, value = setting.group(1).lower(), setting.group(2).strip()
            if key == "tags":
                pathway.tags = [t.strip() for t in value.split(",") if t.strip()]
            elif key == "hazard":
                pathway.hazard = value
            else:
                pathway.complaint = value
            continue
        bullet = _BULLET.match(raw)
        if bullet and section is not None:
            text = bullet.group(1).strip()
            if section == "context":
                pathway.context.append(text)
            else:
                pathway.flags.setdefault(section, []).append(text)
    if problems:
        raise UserError("invalid pathway document", problems)
    if not any(pathway.flags.values()):
        raise UserError(
            f"{path}: no red flags found; list them as bullets under a `## LEVEL` heading ({', '.join(levels)})"
        )
    return pathway
