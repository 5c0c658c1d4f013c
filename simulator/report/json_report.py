"""The JSON report: the Report model as JSON, with a versioned schema (`schema_version`, docs/report-schema.json)."""

from __future__ import annotations

__all__ = ["report_json", "report_schema", "write_json"]

import json
from pathlib import Path
from typing import Any

from simulator.report.model import REPORT_SCHEMA_VERSION, Report, full_report_model


def report_json(report: Report, transcripts: bool = False) -> dict[str, Any]:
    """The report as plain JSON data; transcripts are left out (an empty list) unless asked for."""
    data = report.model_dump(mode="json", exclude={"transcripts"} if not transcripts else set())
    if not transcripts:
        data["transcripts"] = []
    return data


def write_json(report: Report, path: Path, transcripts: bool = False) -> None:
    """Write the JSON report to `path` (UTF-8, indented, stable key order)."""
    path.write_text(
        json.dumps(report_json(report, transcripts), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def report_schema() -> dict[str, Any]:
    """The JSON schema of the report file, generated from the model and tagged with its version."""
    schema = full_report_model().model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"simulator-report-v{REPORT_SCHEMA_VERSION}.json"
    schema["title"] = f"simulator report, schema version {REPORT_SCHEMA_VERSION}"
    return schema
