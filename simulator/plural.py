"""A count with its noun, in the number the count needs: `1 vignette`, `8 vignettes`, `0 vignettes`.

One home, so that no rate, bound or header says "over 1 vignettes" and a clinician never stops to wonder
whether a word was cut. Nouns are the report's own units, all regular in English.
"""

from __future__ import annotations

__all__ = ["noun", "plural"]


def noun(count: int | float, singular: str, plural_form: str | None = None) -> str:
    """`singular` for exactly one, else its plural: `vignette` -> `vignettes`, or `plural_form` where adding
    an s is wrong (`noun(k, "was", "were")`, `noun(n, "criterion", "criteria")`)."""
    if count == 1:
        return singular
    return plural_form if plural_form is not None else f"{singular}s"


def plural(count: int | float, singular: str) -> str:
    """`1 vignette`, `8 vignettes`."""
    return f"{count} {noun(count, singular)}"
