"""A count says its noun in the number the count needs: "over 1 vignette", "1 vignette × 1 run = 1
conversation", never "over 1 vignettes". One home (simulator/plural.py); a structural test finds any text
that puts a counted unit after a number by hand."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from simulator.plural import noun, plural
from simulator.report.model import RunInfo
from simulator.stats.rates import rate_view
from tests.support.source import modules, source_text

PACKAGE = Path(__file__).resolve().parent.parent / "simulator"
UNITS = "vignette|conversation|repeat|scenario|turn|run|verdict|user|call|error|problem|session|variant"
BY_HAND = re.compile(r"\{[^{}:!'\"]+\} (?:" + UNITS + r")s\b|\{'s' if |\{\"s\" if ")


@pytest.mark.parametrize(
    ("count", "word", "said"),
    [
        (0, "vignette", "0 vignettes"),
        (1, "vignette", "1 vignette"),
        (2, "run", "2 runs"),
        (1.0, "call", "1.0 call"),
    ],
)
def test_plural_says_the_noun_in_the_number_the_count_needs(count: float, word: str, said: str) -> None:
    assert plural(count, word) == said
    assert noun(count, word) == said.split(" ", 1)[1]


def test_a_rate_over_one_vignette_says_one_vignette() -> None:
    one = rate_view(1, 3, counts="successes", per_scenario=[(1, 3)])
    many = rate_view(2, 6, counts="successes", per_scenario=[(1, 3), (1, 3)])
    assert one.clustered is not None and many.clustered is not None
    assert one.clustered.over == "over 1 vignette" and "vignettes" not in one.text
    assert many.clustered.over == "over 2 vignettes"


@pytest.mark.parametrize(
    ("vignettes", "runs", "said"),
    [(1, 1, "1 vignette × 1 run = 1 conversation"), (2, 3, "2 vignettes × 3 runs = 6 conversations")],
)
def test_the_report_header_counts_in_words(vignettes: int, runs: int, said: str) -> None:
    info = RunInfo.model_construct(
        vignettes=vignettes, scenarios=vignettes, runs=runs, conversations=vignettes * runs, planned=0
    )
    assert info.counted == said


def _texts(path: Path) -> list[tuple[int, str]]:
    """The f-strings of a module, with their line."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source_text(path)).readline):
        prefix = re.match(r"[A-Za-z]*", token.string).group(0).lower()  # type: ignore[union-attr]
        if token.type == tokenize.STRING and "f" in prefix:
            found.append((token.start[0], token.string))
    return found


def test_no_text_puts_a_unit_after_a_count_by_hand() -> None:
    """`f"{n} vignettes"` says "1 vignettes" for one; `plural(n, "vignette")` says it right."""
    by_hand = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {BY_HAND.search(text).group(0)}"  # type: ignore[union-attr]
        for path in modules()
        for line, text in _texts(path)
        if BY_HAND.search(text)
    ]
    assert not by_hand, "use simulator.plural.plural(count, noun):\n" + "\n".join(by_hand)
