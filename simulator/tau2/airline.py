"""The airline domain's tools over a tau2-bench airline database, written for this engine (not tau2's code).

Each tool is `function(state, **arguments)` as the engine's environment calls it (docs/environment.md); the
state is the database itself (`users`, `reservations`, `flights`). Only the tools listed in `TOOLS` exist
here; a task whose gold actions use another one is refused by the converter, naming the tool.
"""

from __future__ import annotations

__all__ = ["TOOLS"]

from typing import Any

from simulator.tau2.domain import DomainTool


def _record(state: dict[str, Any], table: str, key: str, noun: str) -> dict[str, Any]:
    record = state.get(table, {}).get(key)
    if not isinstance(record, dict):
        raise KeyError(f"{noun} {key} not found")
    return record


def get_user_details(state: dict[str, Any], user_id: str) -> dict[str, Any]:
    """The user's profile: name, membership, payment methods and reservation ids."""
    return _record(state, "users", user_id, "user")


def get_reservation_details(state: dict[str, Any], reservation_id: str) -> dict[str, Any]:
    """One reservation: its flights, passengers, cabin, insurance, payments and status."""
    return _record(state, "reservations", reservation_id, "reservation")


def cancel_reservation(state: dict[str, Any], reservation_id: str) -> dict[str, Any]:
    """Cancel the whole reservation: every payment is refunded to the method it came from (a negative
    payment of the same amount) and the status becomes `cancelled`."""
    reservation = _record(state, "reservations", reservation_id, "reservation")
    if reservation.get("status") == "cancelled":
        raise ValueError(f"reservation {reservation_id} is already cancelled")
    refunds = [
        {"payment_id": payment["payment_id"], "amount": -payment["amount"]}
        for payment in reservation.get("payment_history", [])
    ]
    reservation.setdefault("payment_history", []).extend(refunds)
    reservation["status"] = "cancelled"
    return reservation


def transfer_to_human_agents(state: dict[str, Any], summary: str) -> str:
    """Hand the customer over to a human agent; the database does not change."""
    return "Transfer successful"


def _string(name: str, description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
    }


_MODULE = "simulator.tau2.airline"
TOOLS = {
    "get_user_details": DomainTool(
        function=f"{_MODULE}:get_user_details",
        description="Get the details of a user, including their reservations.",
        parameters=_string("user_id", "The user id, such as 'sara_doe_496'."),
    ),
    "get_reservation_details": DomainTool(
        function=f"{_MODULE}:get_reservation_details",
        description="Get the details of a reservation.",
        parameters=_string("reservation_id", "The reservation id, such as '8JX2WO'."),
    ),
    "cancel_reservation": DomainTool(
        function=f"{_MODULE}:cancel_reservation",
        description="Cancel the whole reservation; payments are refunded to their original methods.",
        parameters=_string("reservation_id", "The reservation id, such as 'ZFA04Y'."),
        writes=True,
    ),
    "transfer_to_human_agents": DomainTool(
        function=f"{_MODULE}:transfer_to_human_agents",
        description="Transfer the user to a human agent, with a summary of their issue.",
        parameters=_string("summary", "A summary of the user's issue."),
    ),
}
