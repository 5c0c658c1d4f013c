"""Corrections for multiple comparisons: with many cells, some difference is "significant" by chance alone."""

from __future__ import annotations

__all__ = ["HOLM_TEXT", "holm"]

HOLM_TEXT = (
    "Holm step-down correction over the {m} paired tests shown (family-wise error rate {alpha:g}): "
    "p-values are adjusted, a change counts only when its adjusted p < {alpha:g}"
)


def holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given: sort ascending, multiply the i-th smallest (from 0) by
    m - i, keep the running maximum so the order is preserved, cap at 1."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted
