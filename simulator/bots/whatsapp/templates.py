"""A template message as the person reads it: the template's text with the bot's parameters filled in.

The Cloud API sends a template by name (`template.name`, `template.language.code`) with the values of its
placeholders (`components[type=body].parameters`); the text itself lives in Meta's template manager, not in
the message. A suite gives the engine those texts in `bot.templates` (template name -> body, with `{{1}}`,
`{{2}}` … or named `{{first_name}}` placeholders), so the judges and the outcome reader read what the patient
would. A template the suite does not give is recorded saying so, with its parameters. With the text known, a
body whose placeholders and parameters do not match is refused as the Cloud API refuses it (error 132000).
"""

from __future__ import annotations

__all__ = ["template_parts"]

from typing import Any

from simulator.bots.whatsapp.fields import RuleBroken, object_field, text_field
from simulator.config.bots.whatsapp import TEMPLATE_PLACEHOLDER as PLACEHOLDER
from simulator.record.parts import Part, TextPart


def _value(parameter: Any, where: str) -> str:
    """What the person reads for one parameter: its text, or the fallback of a currency or date."""
    parameter = object_field(parameter, where)
    kind = parameter.get("type", "text")
    if kind == "text":
        return text_field(parameter.get("text"), f"{where}.text", 32768) or ""
    if kind in ("currency", "date_time"):
        shown = object_field(parameter.get(kind), f"{where}.{kind}").get("fallback_value")
        return text_field(shown, f"{where}.{kind}.fallback_value", 1024) or ""
    return f"[{kind}]"  # a media or location header parameter: shown by kind


def _body_parameters(template: dict[str, Any]) -> list[tuple[str | None, str]]:
    """The body's parameters in order: (its parameter_name, when named; what the person reads)."""
    found: list[tuple[str | None, str]] = []
    components = template.get("components") or []
    if not isinstance(components, list):
        raise RuleBroken("template.components", "must be a list of components")
    for c, component in enumerate(components):
        component = object_field(component, f"template.components[{c}]")
        if str(component.get("type", "")).lower() != "body":
            continue
        parameters = component.get("parameters") or []
        if not isinstance(parameters, list):
            raise RuleBroken(f"template.components[{c}].parameters", "must be a list of parameters")
        for p, parameter in enumerate(parameters):
            where = f"template.components[{c}].parameters[{p}]"
            name = parameter.get("parameter_name") if isinstance(parameter, dict) else None
            found.append((name if isinstance(name, str) else None, _value(parameter, where)))
    return found


def _filled(body: str, parameters: list[tuple[str | None, str]]) -> str:
    """The body with its placeholders filled; `RuleBroken` (the API's 132000) when they do not match."""
    wanted = list(dict.fromkeys(PLACEHOLDER.findall(body)))
    named = {name: value for name, value in parameters if name is not None}
    values = {**{str(n + 1): value for n, (_, value) in enumerate(parameters)}, **named}
    missing = [w for w in wanted if w not in values]
    if missing or len(parameters) != len(wanted):
        raise RuleBroken(
            "template.components[type=body].parameters",
            f"must give the template's {len(wanted)} body parameter(s) ({', '.join('{{' + w + '}}' for w in wanted) or 'none'}); "
            f"the bot sent {len(parameters)} (the Cloud API answers 132000: number of parameters does not match)",
        )
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], body)


def template_parts(message: dict[str, Any], texts: dict[str, str]) -> list[Part]:
    """A template message as a `text` part: the suite's text for it filled in, or a note that it is unknown."""
    template = object_field(message.get("template"), "template")
    name = text_field(template.get("name"), "template.name", 512) or ""
    language = object_field(template.get("language"), "template.language")
    code = text_field(language.get("code"), "template.language.code", 20)
    parameters = _body_parameters(template)
    body = texts.get(name)
    if body is not None:
        return [TextPart(text=_filled(body, parameters))]
    shown = "; params: " + " | ".join(value for _, value in parameters) if parameters else ""
    return [
        TextPart(
            text=f"[template {name} ({code}): text not known to the simulator (give it in bot.templates){shown}]"
        )
    ]
