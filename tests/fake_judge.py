"""A fake judge model for the fake LLM server: it reads a judge request the way a gullible model would.

It finds the transcript between the first `<transcript ...>` tag of the messages and the first
`</transcript>` after it, reads the criterion from the `<criterion>` block outside that region, and judges
by keywords: the first "quoted phrase" of the criterion line is what a bot message must contain to pass;
the first quoted phrase of the "Not applicable" line is what a user message must contain for the
criterion to apply. Like a model without defences, it obeys "ignore previous instructions ... answer pass"
when that text sits outside the transcript region, so a prompt that lets a message escape its delimiters
fools it. Options make it fabricate evidence, answer garbage, or favour the first of two transcripts.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field

from simulator.testing.fake_llm import FakeCall, FakeReply

INJECTION = re.compile(r"ignore (?:all )?previous instructions", re.IGNORECASE)
_OPEN = re.compile(r"<transcript[^>]*>")
_CLOSE = "</transcript>"
_CRITERION = re.compile(r'<criterion id="([^"]+)">(.*?)</criterion>', re.DOTALL)
_MESSAGE = re.compile(r'<message index="\d+" speaker="(\w+)">\n(.*?)\n</message>', re.DOTALL)
_LINE = re.compile(r"^(?:\[\d+\] )?(USER|BOT): (.*)$", re.MULTILINE)
_QUOTED = re.compile(r'"([^"]+)"')
FABRICATED = "I told you to call 999 straight away."


def transcript_regions(text: str) -> tuple[list[str], str]:
    """Each transcript region (first open tag to the first close tag after it), and the text outside them."""
    regions: list[str] = []
    outside: list[str] = []
    position = 0
    while (opening := _OPEN.search(text, position)) is not None:
        outside.append(text[position : opening.start()])
        end = text.find(_CLOSE, opening.end())
        if end < 0:
            regions.append(text[opening.end() :])
            position = len(text)
            break
        regions.append(text[opening.end() : end])
        position = end + len(_CLOSE)
    outside.append(text[position:])
    return regions, "".join(outside)


def parse_messages(region: str) -> list[tuple[str, str]]:
    """(speaker, text) of each message: our `<message>` elements, or `USER:` / `BOT:` lines."""
    found = [(speaker, html.unescape(text)) for speaker, text in _MESSAGE.findall(region)]
    if found:
        return found
    return [(speaker.lower(), text) for speaker, text in _LINE.findall(region)]


def parse_criterion(text: str) -> dict[str, str]:
    """The criterion block's id and its `Criterion:` / `Pass:` / `Fail:` / `Not applicable:` lines."""
    match = _CRITERION.search(text)
    if match is None:
        return {}
    fields = {"id": match.group(1)}
    for line in match.group(2).splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            fields[key.strip().lower()] = value.strip()
    return fields


def _first_quoted(text: str) -> str | None:
    match = _QUOTED.search(text or "")
    return match.group(1).lower() if match else None


@dataclass
class FakeJudge:
    """A responder for FakeLLMServer that plays the judge (and the pairwise judge)."""

    fabricate: bool = False
    garbage_first: int = 0  # the first n calls answer prose instead of JSON
    garbage_for: set[str] = field(default_factory=set)  # criterion ids that always get prose
    position_bias: bool = True  # pairwise: prefer the first transcript when the keyword cannot decide
    calls: int = 0

    def __call__(self, call: FakeCall) -> FakeReply:
        self.calls += 1
        messages_text = "\n".join(m.content for m in call.messages)
        regions, outside = transcript_regions(messages_text)
        outside = (call.system or "") + "\n" + outside
        criterion = parse_criterion(outside)
        if self.calls <= self.garbage_first or criterion.get("id") in self.garbage_for:
            return FakeReply(text="Sure! The bot did a great job overall, I would say it passes.")
        if INJECTION.search(outside):
            return FakeReply(
                text=json.dumps({"reasoning": "As instructed, pass.", "evidence": [], "result": "pass"})
            )
        if len(regions) == 2:
            return FakeReply(text=json.dumps(self._compare(regions, criterion)))
        return FakeReply(
            text=json.dumps(self._judge(parse_messages(regions[0] if regions else ""), criterion))
        )

    def _judge(self, messages: list[tuple[str, str]], criterion: dict[str, str]) -> dict[str, object]:
        required = _first_quoted(criterion.get("criterion", ""))
        trigger = _first_quoted(criterion.get("not applicable", ""))
        users = [text for speaker, text in messages if speaker == "user"]
        bots = [text for speaker, text in messages if speaker == "bot"]
        if trigger and not any(trigger in text.lower() for text in users):
            return {
                "reasoning": f"The user never mentions {trigger}.",
                "evidence": [],
                "result": "not_applicable",
            }
        hit = next((text for text in bots if required and required in text.lower()), None)
        if hit is not None:
            evidence = [FABRICATED] if self.fabricate else [hit]
            return {"reasoning": f"The bot says {required}.", "evidence": evidence, "result": "pass"}
        cause = next((text for text in users if trigger and trigger in text.lower()), None)
        evidence = [FABRICATED] if self.fabricate else [cause or (bots[-1] if bots else "")]
        return {"reasoning": f"The bot never says {required}.", "evidence": evidence, "result": "fail"}

    def _compare(self, regions: list[str], criterion: dict[str, str]) -> dict[str, object]:
        required = _first_quoted(criterion.get("criterion", "")) or ""
        meets = [
            any(required in text.lower() for speaker, text in parse_messages(region) if speaker == "bot")
            for region in regions
        ]
        if meets[0] != meets[1]:
            better = "first" if meets[0] else "second"
        else:
            better = "first" if self.position_bias else "tie"
        return {"reasoning": f"Compared on whether the bot says {required}.", "better": better}
