"""The airline domain's tools over a tau2-bench airline database, written for this engine (not tau2's code).

Each tool is `function(state, **arguments)` as the engine's environment calls it (docs/environment.md); the
state is the database itself (`users`, `reservations`, `flights`). Only the tools listed in `TOOLS` exist
here; a task whose gold actions use another one is refused by the converter, naming the tool.
"""

from __future__ import annotations

__all__ = ["TOOLS"]

import ast
import operator
import re
from collections.abc import Callable
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


def calculate(state: dict[str, Any], expression: str) -> str:
    """An arithmetic expression (numbers, + - * / and brackets), rounded to two decimals."""
    if not re.fullmatch(r"[\d\s.+\-*/()]+", expression):
        raise ValueError("only numbers, + - * / and brackets are allowed")
    tree = ast.parse(expression, mode="eval")
    return str(round(float(_arithmetic(tree.body)), 2))


def _arithmetic(node: ast.expr) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_arithmetic(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_arithmetic(node.left), _arithmetic(node.right))
    raise ValueError("not an arithmetic expression")


_OPERATORS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def search_direct_flight(
    state: dict[str, Any], origin: str, destination: str, date: str
) -> list[dict[str, Any]]:
    """Direct flights between two airports on a date that can still be booked, with seats and prices."""
    found = []
    for flight in state.get("flights", {}).values():
        day = flight.get("dates", {}).get(date)
        if (
            flight["origin"] == origin
            and flight["destination"] == destination
            and day
            and day["status"] == "available"
        ):
            found.append({**{k: v for k, v in flight.items() if k != "dates"}, "date": date, **day})
    return found


def get_flight_status(state: dict[str, Any], flight_number: str, date: str) -> str:
    """The status of a flight on a date (available, delayed, on time, flying, landed, cancelled)."""
    day = _record(state, "flights", flight_number, "flight").get("dates", {}).get(date)
    if day is None:
        raise KeyError(f"flight {flight_number} does not fly on {date}")
    return str(day["status"])


def _charge(state: dict[str, Any], reservation: dict[str, Any], payment_id: str, amount: int) -> None:
    """Take `amount` from one of the user's payment methods (a gift card or certificate must cover it) and
    record it in the reservation's payment history."""
    user = _record(state, "users", reservation["user_id"], "user")
    method = user.get("payment_methods", {}).get(payment_id)
    if method is None:
        raise KeyError(f"payment method {payment_id} not found")
    if method["source"] in ("gift_card", "certificate"):
        if method.get("amount", 0) < amount:
            raise ValueError(f"{payment_id} has {method.get('amount', 0)}, not enough for {amount}")
        method["amount"] = method["amount"] - amount
    reservation.setdefault("payment_history", []).append({"payment_id": payment_id, "amount": amount})


def update_reservation_baggages(
    state: dict[str, Any], reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
) -> dict[str, Any]:
    """Set the checked bags; each added non-free bag costs 50 dollars, charged to `payment_id`."""
    reservation = _record(state, "reservations", reservation_id, "reservation")
    added = nonfree_baggages - reservation.get("nonfree_baggages", 0)
    if added > 0:
        _charge(state, reservation, payment_id, _BAG_PRICE * added)
    reservation["total_baggages"] = total_baggages
    reservation["nonfree_baggages"] = nonfree_baggages
    return reservation


_BAG_PRICE = 50


def update_reservation_passengers(
    state: dict[str, Any], reservation_id: str, passengers: list[dict[str, Any]]
) -> dict[str, Any]:
    """Replace the passengers' details; their number cannot change."""
    reservation = _record(state, "reservations", reservation_id, "reservation")
    if len(passengers) != len(reservation.get("passengers", [])):
        raise ValueError("the number of passengers cannot change")
    reservation["passengers"] = [
        {"first_name": p["first_name"], "last_name": p["last_name"], "dob": p["dob"]} for p in passengers
    ]
    return reservation


def _string(name: str, description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
    }


def _object(strings: dict[str, str], integers: dict[str, str] | None = None) -> dict[str, Any]:
    properties: dict[str, Any] = {name: {"type": "string", "description": d} for name, d in strings.items()}
    properties |= {
        name: {"type": "integer", "minimum": 0, "description": d} for name, d in (integers or {}).items()
    }
    return {"type": "object", "properties": properties, "required": list(properties)}


def _tool(
    function: Callable[..., Any], description: str, parameters: dict[str, Any]
) -> tuple[str, DomainTool]:
    """A tool under its function's name (tau2's tool names are this module's function names)."""
    name = function.__name__
    return name, DomainTool(function=f"{__name__}:{name}", description=description, parameters=parameters)


TOOLS = dict(
    [
        _tool(
            get_user_details,
            "Get the details of a user, including their reservations.",
            _string("user_id", "The user id, such as 'sara_doe_496'."),
        ),
        _tool(
            get_reservation_details,
            "Get the details of a reservation.",
            _string("reservation_id", "The reservation id, such as '8JX2WO'."),
        ),
        _tool(
            cancel_reservation,
            "Cancel the whole reservation; payments are refunded to their original methods.",
            _string("reservation_id", "The reservation id, such as 'ZFA04Y'."),
        ),
        _tool(
            transfer_to_human_agents,
            "Transfer the user to a human agent, with a summary of their issue.",
            _string("summary", "A summary of the user's issue."),
        ),
        _tool(
            calculate,
            "Calculate the result of an arithmetic expression.",
            _string("expression", "Numbers, + - * / and brackets, such as '2 * 50 + 12'."),
        ),
        _tool(
            search_direct_flight,
            "Search direct flights between two airports on a date.",
            _object(
                {
                    "origin": "IATA code, such as 'JFK'.",
                    "destination": "IATA code, such as 'LAX'.",
                    "date": "YYYY-MM-DD.",
                }
            ),
        ),
        _tool(
            get_flight_status,
            "Get the status of a flight on a date.",
            _object({"flight_number": "Such as 'HAT001'.", "date": "YYYY-MM-DD."}),
        ),
        _tool(
            update_reservation_baggages,
            "Update the checked bags of a reservation; added non-free bags are paid with payment_id.",
            _object(
                {"reservation_id": "The reservation id.", "payment_id": "A payment method id of the user."},
                integers={
                    "total_baggages": "All checked bags.",
                    "nonfree_baggages": "The bags that are paid for.",
                },
            ),
        ),
        _tool(
            update_reservation_passengers,
            "Update the passengers' details of a reservation; their number cannot change.",
            {
                "type": "object",
                "properties": {
                    "reservation_id": {"type": "string"},
                    "passengers": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {k: {"type": "string"} for k in ("first_name", "last_name", "dob")},
                            "required": ["first_name", "last_name", "dob"],
                        },
                    },
                },
                "required": ["reservation_id", "passengers"],
            },
        ),
    ]
)
