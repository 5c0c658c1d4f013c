"""Which languages a persona writes in, as the scenario declares them (`writes_in`, `switches_to`), and
whether the offline user can speak them with a suite's vocabulary.

`language` on a scenario is the person's first language, which a second-language persona may not write in
(the triage demo's Spanish- and Portuguese-speaking patients write English); the audit and the users read
`writes_in` (default English) and `switches_to` (the languages this person switches into and back).
"""

from __future__ import annotations

__all__ = [
    "LANGUAGE_NAMES",
    "language_code",
    "language_name",
    "offline_language_problems",
    "persona_languages",
]

import re
from typing import Any

from simulator.errors import Problem

# Names for prompts and messages; any other code is shown as written.
LANGUAGE_NAMES = {
    "ar": "Arabic",
    "de": "German",
    "en": "English",
    "es": "Spanish",
    "fr": "French",
    "hi": "Hindi",
    "it": "Italian",
    "nl": "Dutch",
    "pl": "Polish",
    "pt": "Portuguese",
    "ru": "Russian",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "ur": "Urdu",
    "zh": "Chinese",
}
LANGUAGE_TAG = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")


def language_code(tag: str | None) -> str:
    """The primary language of a tag (`es-MX` -> `es`), lower case; English when unset."""
    return (tag or "en").split("-")[0].casefold()


def language_name(tag: str | None) -> str:
    """`Spanish` for `es` or `es-MX`; an unknown code as written."""
    return LANGUAGE_NAMES.get(language_code(tag), tag or "English")


def persona_languages(scenario: Any) -> list[str]:
    """The codes of the languages the persona writes in: `writes_in` first, then each of `switches_to`."""
    codes = [language_code(getattr(scenario, "writes_in", None))]
    for tag in getattr(scenario, "switches_to", None) or []:
        if language_code(tag) not in codes:
            codes.append(language_code(tag))
    return codes


def offline_language_problems(
    scenarios: list[Any], vocabulary: Any, vocabulary_path: str | None
) -> list[Problem]:
    """One problem per scenario language the offline user has no phrases for in the suite's vocabulary
    (`languages:`), naming the scenario's file and field and the fix; it never answers in English instead."""
    problems: dict[tuple[str, int | None, str, str], Problem] = {}
    where = vocabulary_path or "a vocabulary file (name it in the suite's user.vocabulary)"
    for scenario in scenarios:
        for field in ("writes_in", "switches_to"):
            value = getattr(scenario, field, None)
            tags = value if isinstance(value, list) else [value] if value else []
            for tag in tags:
                if vocabulary is not None and vocabulary.phrases(tag) is not None:
                    continue
                if vocabulary is None and language_code(tag) == "en":
                    continue
                code = language_code(tag)
                source = str(getattr(scenario, "_source", "") or scenario.id)
                line = getattr(scenario, "_line", None)
                problems[(source, line, field, code)] = Problem(
                    source,
                    f"scenario '{scenario.id}': the offline user has no phrases in {language_name(tag)} "
                    f"('{tag}'); add `languages: {{{code}: {{greetings: [...], want_to: ..., dont_know: "
                    f"[...], nudges: [...]}}}}` to {where}, or run this scenario with an LLM user "
                    "(user.model)",
                    line,
                    field,
                )
    return list(problems.values())
