"""Languages and code-switching (issue 27 part 5): `writes_in` and `switches_to` on scenarios, read by the
LLM user's prompt, the offline user (its phrases from the vocabulary, refused when missing) and the
fidelity drift check in code; the audit prompt's side is tested through the SDK in test_languages_llm.py."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from simulator.analysis.rundata import load_run
from simulator.config.loading import load_scenarios
from simulator.config.scenario import Scenario
from simulator.config.suite import load_suite
from simulator.config.vocabulary import load_vocabulary
from simulator.engine.roles import check_offline_languages, suite_language_problems
from simulator.engine.runner import RunOptions, run_suite
from simulator.errors import UserError
from simulator.judging.fidelity import FidelityAuditor
from simulator.judging.fidelity_prompt import build_audit_request
from simulator.record.folder import RunFolder
from simulator.record.models import ConversationRecord
from simulator.record.transcript import Turn
from simulator.report.model import build_report
from simulator.text.language import language_of
from simulator.users.offline import OfflineUser
from simulator.users.prompt import render_user_prompt

ROOT = Path(__file__).resolve().parent.parent
VOCABULARY = load_vocabulary(ROOT / "examples" / "triage_vocabulary.yaml")
SPANISH_SUITE = ROOT / "scenarios" / "triage-es" / "suite.yaml"
SWITCHING_SUITE = ROOT / "scenarios" / "triage-es" / "switching" / "suite.yaml"


def _scenario(**fields: Any) -> Scenario:
    base = {
        "id": "s",
        "persona": "A patient.",
        "goal": "Ask about chest pain.",
        "facts": ["Pain for two hours."],
    }
    return Scenario.model_validate({**base, **fields})


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("the pain is in my chest and it has been there for two hours", "en"),
        ("i'm not sure, what should i do about it?", "en"),
        ("el dolor se me va al brazo izquierdo desde hace una hora", "es"),
        ("no sé, tengo una presión en el pecho que me duele", "es"),
        ("eu estou com uma dor no peito, não sei o que fazer", "pt"),
        ("j'ai mal à la poitrine depuis une heure et je ne sais pas", "fr"),
        ("ich habe seit einer stunde schmerzen in der brust und das ist nicht gut", "de"),
        ("no sé", None),  # too short to tell: never drift
        ("ok", None),
        ("37.8", None),
    ],
)
def test_language_of_tells_short_messages_or_says_it_cannot(text: str, code: str | None) -> None:
    assert language_of(text) == code


def test_switches_to_takes_one_code_or_a_list_and_refuses_a_name(tmp_path: Path) -> None:
    assert _scenario(switches_to="es").switches_to == ["es"]
    assert _scenario(switches_to=["es", "pt-BR"]).switches_to == ["es", "pt-BR"]
    path = tmp_path / "s.yaml"
    for field, value in (("writes_in", "Spanish"), ("switches_to", "[es, castellano antiguo]")):
        path.write_text(f"id: s\npersona: p\ngoal: g\n{field}: {value}\n", encoding="utf-8")
        with pytest.raises(UserError) as caught:
            load_scenarios([path])
        problem = caught.value.problems[0]
        assert str(path) in problem.file and field in (problem.field or "")
        assert "not a language code" in problem.message and "es, pt or pt-BR" in problem.message


def test_the_llm_users_prompt_says_which_languages_it_writes_and_switches() -> None:
    switching = render_user_prompt(_scenario(language="es", switches_to=["es"]))
    assert "their first language is es; write in English; switch between English and Spanish" in switching
    assert "write in Spanish" in render_user_prompt(_scenario(writes_in="es"))
    two = render_user_prompt(_scenario(switches_to=["es", "pt"]))
    assert "switch between English and Spanish and Portuguese" in two
    # Without the fields the prompt is as it was: `language` alone is the first language, nothing more.
    plain = render_user_prompt(_scenario(language="es"))
    assert (
        "voice (their first language is es)." in plain and "switch" not in plain and "write in" not in plain
    )


def test_the_audit_prompt_allows_the_languages_a_persona_switches_into() -> None:
    def block(scenario: Scenario) -> str:
        request = build_audit_request("m", scenario, [], 0.0, 100)
        text = request.messages[-1].content
        return text.split("<languages>", 1)[1].split("</languages>", 1)[0] if "<languages>" in text else ""

    assert "switches to Spanish and back" in block(_scenario(switches_to=["es"]))
    assert "not drift" in block(_scenario(switches_to=["es"]))
    assert "writes only in English" in block(_scenario(writes_in="en"))
    assert "writes only in Spanish" in block(_scenario(writes_in="es-MX"))
    assert block(_scenario(language="es")) == ""  # no field: the instructions' own rule (drift) applies


def _turn(index: int, role: str, text: str) -> Turn:
    return Turn(index=index, role=role, messages=[text], started_at=datetime.now(UTC))  # type: ignore[arg-type]


def _record(user_lines: list[str]) -> ConversationRecord:
    now = datetime.now(UTC)
    turns = []
    for line in user_lines:
        turns += [("user", line), ("bot", "Can you tell me more?")]
    return ConversationRecord(
        id="c#0", scenario_id="c", repeat=0, stop_reason="max_turns", started_at=now, ended_at=now,
        turns=[_turn(i, role, text) for i, (role, text) in enumerate(turns)],
    )  # fmt: skip


ENGLISH_THEN_SPANISH = [
    "hi, I want to ask about the pressure in my chest",
    "sí, el dolor se me va al brazo izquierdo",
    "and it has been there for about two hours",
]
SPANISH_ONLY = [
    "hola, tengo una presión en el pecho",
    "el dolor se me va al brazo",
    "no sé, desde hace dos horas",
]


@pytest.mark.parametrize(
    ("fields", "lines", "result"),
    [
        ({"language": "es", "switches_to": ["es"]}, ENGLISH_THEN_SPANISH, "pass"),  # seed 002's persona
        ({"switches_to": ["es", "fr"]}, ENGLISH_THEN_SPANISH, "pass"),
        ({"writes_in": "es"}, SPANISH_ONLY, "pass"),
        ({"writes_in": "es", "switches_to": ["en"]}, ENGLISH_THEN_SPANISH, "pass"),
        ({}, ENGLISH_THEN_SPANISH, "fail"),  # English by default: a Spanish message drifts
        ({"language": "es"}, ENGLISH_THEN_SPANISH, "fail"),  # a first language is not a licence to switch
        ({"writes_in": "en"}, ENGLISH_THEN_SPANISH, "fail"),
        ({"switches_to": ["pt"]}, ENGLISH_THEN_SPANISH, "fail"),  # switching, but into another language
        ({"writes_in": "es"}, [*SPANISH_ONLY, "what should I do about the pain in my chest then"], "fail"),
    ],
)
def test_the_drift_check_in_code_allows_switching_and_flags_drift(
    fields: dict[str, Any], lines: list[str], result: str
) -> None:
    verdict = FidelityAuditor().drift_in_code(_record(lines), _scenario(**fields))
    assert verdict.result == result, verdict.reasoning
    if result == "fail":
        assert verdict.evidence_verified and verdict.evidence[0].quote in lines[1:]
        assert "the persona writes" in verdict.reasoning


def test_a_language_the_check_cannot_tell_is_never_called_drift() -> None:
    verdict = FidelityAuditor().drift_in_code(_record(SPANISH_ONLY), _scenario(writes_in="it"))
    assert verdict.result == "pass" and "not checked for it" in verdict.reasoning


def _bot(text: str) -> Turn:
    return _turn(0, "bot", text)


def _user(text: str) -> Turn:
    return _turn(0, "user", text)


def test_the_offline_user_speaks_the_scenarios_language_with_the_vocabularys_phrases() -> None:
    scenario = _scenario(
        writes_in="es",
        goal="Saber si puedo esperar a mañana.",
        facts=[
            "Tengo una presión en el pecho desde hace dos horas.",
            "El dolor se me va al brazo izquierdo.",
        ],
        volunteers=0,
    )
    for seed in range(6):
        user = OfflineUser(scenario, seed=seed, vocabulary=VOCABULARY)
        opening = asyncio.run(user.next_message([])).text
        assert "quiero saber si puedo esperar a mañana" in opening.lower(), opening
        turns = [_user(opening)]
        # An English question finds the Spanish fact through the vocabulary's Spanish synonyms.
        turns.append(_bot("Does the pain spread to your arm?"))
        said = asyncio.run(user.next_message(turns)).text
        assert said == "El dolor se me va al brazo izquierdo.", said
        turns += [_user(said), _bot("Do you have any allergies?")]
        unknown = asyncio.run(user.next_message(turns)).text
        assert unknown in VOCABULARY.languages["es"].dont_know
        turns += [_user(unknown), _bot("Thanks.")]
        assert asyncio.run(user.next_message(turns)).text in VOCABULARY.languages["es"].nudges


def test_a_code_switching_offline_user_alternates_its_languages() -> None:
    scenario = _scenario(switches_to=["es"], facts=["Pain for two hours."], volunteers=0)
    user = OfflineUser(scenario, seed=3, vocabulary=VOCABULARY)
    turns = [_user(asyncio.run(user.next_message([])).text)]
    said = []
    for _ in range(4):
        turns.append(_bot("Do you have any allergies?"))
        text = asyncio.run(user.next_message(turns)).text
        said.append(text)
        turns.append(_user(text))
    english, spanish = VOCABULARY.phrases("en"), VOCABULARY.languages["es"]
    assert english is not None
    assert [said[0] in spanish.dont_know, said[1] in english.dont_know] == [True, True]
    assert [said[2] in spanish.dont_know, said[3] in english.dont_know] == [True, True]


@pytest.mark.parametrize(
    ("fields", "field", "vocabulary"),
    [
        ({"writes_in": "es"}, "writes_in", None),
        ({"switches_to": ["es"]}, "switches_to", None),
        ({"writes_in": "fr"}, "writes_in", VOCABULARY),
        ({"writes_in": "es", "switches_to": ["de"]}, "switches_to", VOCABULARY),
    ],
)
def test_the_offline_user_refuses_a_language_its_vocabulary_lacks(
    fields: dict[str, Any], field: str, vocabulary: Any
) -> None:
    with pytest.raises(UserError) as caught:
        OfflineUser(_scenario(**fields), vocabulary=vocabulary)
    [problem] = caught.value.problems
    assert problem.field == field and "the offline user has no phrases in" in problem.message


def _suite_folder(tmp_path: Path, scenarios: str, vocabulary: str | None, model: str = "offline") -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "scenarios.yaml").write_text(textwrap.dedent(scenarios), encoding="utf-8")
    user = f"user: {{model: {model}}}"
    if vocabulary is not None:
        (folder / "vocabulary.yaml").write_text(textwrap.dedent(vocabulary), encoding="utf-8")
        user = f"user: {{model: {model}, vocabulary: vocabulary.yaml}}"
    (folder / "suite.yaml").write_text(
        f"name: t\nscenarios: {{paths: [scenarios.yaml]}}\nbot: {{type: python, factory: "
        f"examples.triage_bot:make_bot}}\n{user}\nruns: 1\n",
        encoding="utf-8",
    )
    return folder / "suite.yaml"


LANGUAGE_SCENARIOS = """
- id: spanish
  persona: A patient who writes Spanish.
  goal: Saber si debo ir al médico.
  writes_in: es
- id: switcher
  persona: A patient who switches to French.
  goal: Ask about a cough.
  switches_to: [fr]
- id: english
  persona: A patient.
  goal: Ask about a cough.
"""


def _validate(suite: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "simulator", "validate", str(suite)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("vocabulary", "missing"),
    [
        (None, ["Spanish ('es')", "French ('fr')"]),
        ("synonyms: {pain: [dolor]}\n", ["Spanish ('es')", "French ('fr')"]),
        (
            "languages:\n  es: {greetings: ['hola '], want_to: quiero, dont_know: [no sé], nudges: [¿y?]}\n",
            ["French ('fr')"],
        ),
    ],
)
def test_validate_and_run_name_each_scenario_whose_language_the_offline_user_lacks(
    tmp_path: Path, vocabulary: str | None, missing: list[str]
) -> None:
    suite = _suite_folder(tmp_path, LANGUAGE_SCENARIOS, vocabulary)
    done = _validate(suite)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if "no phrases in" in line]
    assert len(lines) == len(missing), done.stderr
    for line, language in zip(lines, missing, strict=True):
        assert "scenarios.yaml:" in line and language in line and "Traceback" not in done.stderr
        assert "[writes_in]" in line if "Spanish" in language else "[switches_to]" in line
        assert "add `languages:" in line and "or run this scenario with an LLM user" in line
    loaded = load_suite(suite)
    with pytest.raises(UserError, match="cannot speak these scenarios' languages") as caught:
        asyncio.run(
            run_suite(loaded, loaded.scenarios_to_run(), RunOptions(out=tmp_path / "run", progress=False))
        )
    assert len(caught.value.problems) == len(missing)
    assert not (tmp_path / "run").exists()  # refused before anything was written


@pytest.mark.parametrize("model", ["auto", "openai:some-model"])
def test_auto_is_checked_as_the_offline_user_and_an_llm_user_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    suite = load_suite(_suite_folder(tmp_path, LANGUAGE_SCENARIOS, None, model))
    problems = suite_language_problems(suite)
    if model != "auto":
        assert problems == []  # an LLM user writes any language its prompt asks for
        return
    assert [p.field for p in problems] == ["writes_in", "switches_to"]
    with pytest.raises(UserError, match=r"offline user \(user.model auto: no API key is set\) cannot speak"):
        check_offline_languages("offline", suite, suite.scenarios_to_run())


def test_validate_accepts_the_spanish_suite() -> None:
    done = _validate(SPANISH_SUITE)
    assert done.returncode == 0, done.stderr
    assert f"suite {SPANISH_SUITE}: ok" in done.stdout and "3 scenarios: ok" in done.stdout
    # A suite inside another's scenario folders is checked when named itself, as `run` of it would read it.
    switching = _validate(SWITCHING_SUITE)
    assert switching.returncode == 0, switching.stderr
    assert f"suite {SWITCHING_SUITE}: ok" in switching.stdout
    assert (
        "22 scenarios: ok" in switching.stdout
    )  # the 22 English vignettes it reads (its own are the 3 above)


def test_the_spanish_suite_runs_offline_in_spanish_against_the_english_demo_bot(tmp_path: Path) -> None:
    """The shipped example (docs/languages.md): the user writes Spanish (and the code-switcher both), the
    drift check passes them all, and the English-only demo bot, which does not understand Spanish, falls
    back to its general questions and sends the Spanish chest-pain emergency to a GP."""
    suite = load_suite(SPANISH_SUITE)
    asyncio.run(run_suite(suite, suite.scenarios_to_run(), RunOptions(out=tmp_path / "run", progress=False)))
    folder = RunFolder.open(tmp_path / "run")
    records = list(folder.conversations())
    assert len(records) == 9 and all(r.stop_reason == "user_done" for r in records)
    drift = [v for v in folder.verdicts() if v.criterion_id == "fidelity.drift"]
    assert len(drift) == 9 and {v.result for v in drift} == {"pass"}
    for record in records:
        users = [t.text for t in record.turns if t.role == "user"]
        found = {language_of(text) for text in users} - {None}
        if record.scenario_id == "dolor-pecho-cambia-03":
            assert found <= {"en", "es"}
        else:
            assert found == {"es"}, users
            assert users[0].lower().startswith(("hola", "buenas", "quiero"))
    levels = {r.id: (r.final_state or {}).get("triage_level") for r in records}
    assert {levels[f"dolor-pecho-brazo-es-01#{i}"] for i in range(3)} == {"gp"}  # emergency under-triaged
    assert {levels[f"resfriado-es-02#{i}"] for i in range(3)} == {"gp"}  # self-care over-triaged
    assert {levels[f"dolor-pecho-cambia-03#{i}"] for i in range(3)} == {"emergency"}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "complete"


def test_a_factor_level_makes_each_vignette_code_switch_and_the_demo_bot_holds_invariance(
    tmp_path: Path,
) -> None:
    """scenarios/triage-es/switching: each English vignette also played by a patient who switches into
    Spanish; the switch is in character (no drift), shows in most variants, and changes no triage level."""
    suite = load_suite(SWITCHING_SUITE)
    scenarios = suite.scenarios_to_run()
    switching = [s for s in scenarios if s.factors.get("code-switching") == "spanish"]
    assert len(switching) == 22 and all(s.switches_to == ["es"] for s in switching)
    assert all(s.switches_to == [] for s in scenarios if s.factors.get("code-switching") == "english")
    asyncio.run(run_suite(suite, scenarios, RunOptions(out=tmp_path / "run", progress=False)))
    folder = RunFolder.open(tmp_path / "run")
    spanish = VOCABULARY.languages["es"]
    words = [*spanish.greetings[:2], *spanish.dont_know, *spanish.nudges]
    said = [
        " ".join(t.text for t in r.turns if t.role == "user")
        for r in folder.conversations()
        if "code-switching=spanish" in r.scenario_id
    ]
    assert len(said) == 44 and sum(any(w.strip(" ,.") in text for w in words) for text in said) >= 22
    drift = [v.result for v in folder.verdicts() if v.criterion_id == "fidelity.drift"]
    assert len(drift) == 88 and set(drift) == {"pass"}
    section = build_report(load_run(tmp_path / "run")).relations
    assert section is not None
    [row] = section.rows
    assert row.id == "code-switching" and row.violations.k == 0 and row.violations.n == 44


def test_a_factor_level_refuses_a_language_name(tmp_path: Path) -> None:
    text = SWITCHING_SUITE.read_text(encoding="utf-8").replace("switches_to: [es]", "switches_to: [Spanish]")
    path = tmp_path / "suite.yaml"
    path.write_text(text.replace('"../../triage"', str(ROOT / "scenarios" / "triage")), encoding="utf-8")
    with pytest.raises(UserError) as caught:
        load_suite(path).scenarios_to_run()
    assert "'Spanish' is not a language code" in caught.value.render()
