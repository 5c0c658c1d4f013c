"""The clinic's simulated back-end: plain Python functions over the conversation's state dict.

Each is named in suite.yaml (`function: examples.clinic_env.tools:book_appointment`) and called as
`function(state, **arguments)`, with arguments already checked against the tool's JSON schema. A function
changes the state (the engine records the final state and compares `expected.environment` with it) and
returns JSON data; raising an exception makes the call an error the bot gets back and the record keeps.
"""

from __future__ import annotations

from typing import Any


def lookup_patient(state: dict[str, Any], name: str) -> dict[str, Any]:
    """The registered patient with this name (case-insensitive)."""
    for patient in state.get("patients", []):
        if patient["name"].casefold() == name.strip().casefold():
            return dict(patient)
    raise LookupError(f"no registered patient named {name!r}")


def book_appointment(state: dict[str, Any], patient_id: str, service: str, urgency: str) -> dict[str, Any]:
    """Book the next free slot of a service; the booking is kept in `state["appointments"]`."""
    known = {patient["id"] for patient in state.get("patients", [])}
    if patient_id not in known:
        raise LookupError(f"no patient with id {patient_id!r}")
    appointments = state.setdefault("appointments", [])
    slot = state.get("slots", {}).get(urgency, "tomorrow 09:00")
    booking = {
        "id": f"A{len(appointments) + 1:03d}",
        "patient_id": patient_id,
        "service": service,
        "urgency": urgency,
        "slot": slot,
    }
    appointments.append(booking)
    return booking


def escalate_to_nurse(state: dict[str, Any], patient_id: str, reason: str) -> dict[str, Any]:
    """Page the duty nurse; the escalation is kept in `state["escalations"]`."""
    escalations = state.setdefault("escalations", [])
    escalation = {"id": f"E{len(escalations) + 1:03d}", "patient_id": patient_id, "reason": reason}
    escalations.append(escalation)
    return {**escalation, "nurse": state.get("duty_nurse", "the duty nurse")}


def record_disposition(state: dict[str, Any], patient_id: str, disposition: str) -> dict[str, Any]:
    """Write the outcome of the call to the patient's record."""
    state["disposition"] = {"patient_id": patient_id, "disposition": disposition}
    return {"recorded": True}
