"""tau2-bench tasks as suites (docs/tau2.md): the converter maps the user scenario, the database and the
gold checks; a converted task runs offline with the scripted user against an agent that calls the
environment's tools, and its gold checks pass for a correct agent and fail for a planted wrong one; what
cannot be mapped is refused with the reason or listed, never dropped."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator.cli import main
from simulator.errors import UserError
from simulator.tau2.convert import _person
from simulator.tau2.suite import Tau2ImportOptions, import_tau2

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "tau2"
TASKS = DATA / "airline_tasks.json"
DB = DATA / "airline_db.json"


def _convert(out: Path, **options: Any) -> Path:
    import_tau2(
        Tau2ImportOptions(tasks=options.pop("tasks", TASKS), domain="airline", out=out, db=DB, **options)
    )
    return out


def _scenario(suite: Path, task: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((suite / "scenarios" / f"tau2-airline-{task}.yaml").read_text())
    return data


def _verdicts(run: Path) -> dict[tuple[str, str], dict[str, Any]]:
    lines = (run / "verdicts.jsonl").read_text().splitlines()
    return {(v["scenario_id"], v["criterion_id"]): v for v in map(json.loads, lines)}


def test_the_user_scenario_becomes_persona_goal_facts_and_a_script(tmp_path: Path) -> None:
    suite = _convert(tmp_path / "s", scripted=True)
    task0 = _scenario(suite, "0")
    assert task0["goal"].startswith("I want to cancel reservation EHGLP3.")
    # known information, then the conditional instruction, as facts said in the first person
    assert task0["facts"][:2] == ["I am Emma Kim.", "My user id is emma_kim_9957."]
    assert "If Agent tells me that cancellation is not possible, mention that I was told" in task0["facts"][2]
    # the scripted user sends the reason for the call, then the known information
    assert task0["script"]["context"][0]["text"].startswith("I want to cancel reservation EHGLP3.")
    assert task0["script"]["user_message"] == "I am Emma Kim. My user id is emma_kim_9957."
    task3 = _scenario(suite, "3")
    assert "In their words: I do not know the cabin for the upcoming flight." in task3["persona"]
    assert task3["assertions"] == {"must_contain": ["4"]}  # communicate_info
    criterion = yaml.safe_load((suite / "judges" / "tau2-airline-3-nl-1.yaml").read_text())
    assert criterion["criterion"] == "Agent detects that user is actually a Silver member."
    assert criterion["applies_to"] == ["tau2-airline-3"]
    notes = (suite / "NOTES.md").read_text()
    assert "- 0: the scripted user sends the reason for the call and the known information only" in notes
    assert "MIT licence" in notes


def test_the_gold_database_is_the_initial_one_after_replaying_the_gold_actions(tmp_path: Path) -> None:
    suite = _convert(tmp_path / "s")
    initial = json.loads(DB.read_text())
    refusal = _scenario(suite, "0")["expected"]["environment"]
    assert refusal == initial  # every table compared, none changed: the agent must refuse
    cancelled = _scenario(suite, "19")["expected"]["environment"]["reservations"]["Z7GOZK"]
    assert cancelled["status"] == "cancelled"
    assert cancelled["payment_history"] == [
        {"payment_id": "credit_card_9390", "amount": 130},
        {"payment_id": "credit_card_9390", "amount": -130},
    ]
    assert "script" not in _scenario(suite, "19")  # a simulated user plays it unless --scripted


@pytest.mark.parametrize("agent", ["correct", "wrong"])
def test_a_converted_task_runs_offline_and_reports_its_gold_checks(
    tmp_path: Path, agent: str, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _convert(tmp_path / "s", scripted=True, bot=f"tests._tau2_agents:{agent}")
    assert main(["run", str(suite / "suite.yaml"), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    verdicts = _verdicts(tmp_path / "run")
    gold = {key: v["result"] for key, v in verdicts.items() if not key[1].startswith("tau2-airline")}
    if agent == "correct":
        assert set(gold.values()) == {"pass"}
        assert len(gold) == 3 * 3 + 1  # three tables per task, and task 3's communicate_info
    else:
        failed = sorted(key for key, result in gold.items() if result == "fail")
        assert failed == [
            ("tau2-airline-0", "environment.reservations"),
            ("tau2-airline-19", "environment.reservations"),
            ("tau2-airline-3", "assertions"),
        ]
        reasoning = verdicts[("tau2-airline-0", "environment.reservations")]["reasoning"]
        assert "reservations.EHGLP3.status is 'cancelled', expected None" in reasoning
    # natural-language assertions are criteria: with no judge model they are recorded as not judged
    nl = [v["result"] for key, v in verdicts.items() if key[1].startswith("tau2-airline")]
    assert nl == ["not_judged"] * 4
    capsys.readouterr()
    assert main(["report", str(tmp_path / "run")]) == 0
    report = capsys.readouterr().out
    assert "environment.reservations failure rate" in report
    rate = report.split("environment.reservations failure rate")[1][:40]
    assert ("2/3" if agent == "wrong" else "0/3") in rate
    # a task has no reference answer: exact match and similarity leave it out rather than count a miss
    assert "0/0 n/a" in next(line for line in report.splitlines() if "│ exact match" in line)


def test_what_cannot_run_here_is_refused_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    telecom = DATA / "telecom_tasks.json"
    with pytest.raises(UserError, match=r"no tool implementations for tau2 domain 'telecom'.*--tools MODULE"):
        import_tau2(Tau2ImportOptions(tasks=telecom, domain="telecom", out=tmp_path / "a", db=DB))
    with pytest.raises(UserError) as refused:
        import_tau2(
            Tau2ImportOptions(
                tasks=telecom, domain="telecom", out=tmp_path / "b", db=DB, tools="simulator.tau2.airline"
            )
        )
    assert "user-side tools (dual control)" in refused.value.render()
    assert not (tmp_path / "b").exists()  # nothing written
    tasks = json.loads(TASKS.read_text())
    tasks[0]["evaluation_criteria"]["env_assertions"] = [
        {"env_type": "assistant", "func_name": "f", "arguments": {}}
    ]
    tasks[1]["initial_state"] = {"message_history": [{"role": "user", "content": "hi"}]}
    tasks[2]["evaluation_criteria"]["actions"].append(
        {"action_id": "x", "name": "book_reservation", "arguments": {}}
    )
    edited = tmp_path / "tasks.json"
    edited.write_text(json.dumps(tasks))
    assert (
        main(
            ["import-tau2", str(edited), "--domain", "airline", "--db", str(DB), "--out", str(tmp_path / "c")]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "3 tasks cannot run here as written" in err
    assert "[task 0]: env_assertions call the tau2 domain's assertion functions" in err
    assert "[task 3]: initial_state.message_history" in err
    assert "[task 19]: gold action book_reservation has no implementation in this domain" in err
    with pytest.raises(UserError, match=r"no task of .* could be converted"):
        _convert(tmp_path / "d", tasks=edited, skip_unsupported=True)
    tasks[1]["initial_state"] = None
    edited.write_text(json.dumps(tasks))
    _convert(tmp_path / "e", tasks=edited, skip_unsupported=True)
    assert "- 0: env_assertions call" in (tmp_path / "e" / "NOTES.md").read_text()
    assert sorted(p.name for p in (tmp_path / "e" / "scenarios").iterdir()) == ["tau2-airline-3.yaml"]


def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.json").write_text('[{"id": "1"}]')
    args = ["--domain", "airline", "--db", str(DB), "--out", str(tmp_path / "o")]
    assert main(["import-tau2", str(tmp_path / "t.json"), *args]) == 2
    assert "[user_scenario]: task 1: is missing; add it" in capsys.readouterr().err
    assert main(["import-tau2", str(tmp_path / "missing.json"), *args]) == 2
    assert "missing.json: no such file; check the path" in capsys.readouterr().err
    assert main(["import-tau2", str(TASKS), *args[:2], "--out", str(tmp_path / "o")]) == 2
    assert "--db is required" in capsys.readouterr().err
    assert main(["import-tau2", str(TASKS), *args, "--task", "99"]) == 2
    assert "--task 99: no such task" in capsys.readouterr().err


def test_instructions_are_said_in_the_first_person() -> None:
    assert _person("Your user id is x. You're upset, ask them to help you.") == (
        "My user id is x. I'm upset, ask them to help me."
    )
    assert _person("If the agent asks you for the date, say you were away.") == (
        "If the agent asks me for the date, say I was away."
    )


def test_the_doc_pages_commands_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = (ROOT / "docs" / "tau2.md").read_text()
    commands = [
        line[2:]
        for block in re.findall(r"```console\n(.*?)```", page, re.S)
        for line in block.splitlines()
        if line.startswith("$ ")
    ]
    assert len(commands) >= 2
    shutil.copytree(DATA, tmp_path / "tests" / "data" / "tau2")
    monkeypatch.chdir(tmp_path)
    for command in commands:
        argv = shlex.split(command)
        assert argv[:3] == ["python", "-m", "simulator"], command
        assert main(argv[3:]) == 0, command


def test_initial_state_and_missing_criteria(tmp_path: Path) -> None:
    tasks = json.loads(TASKS.read_text())
    tasks[0]["initial_state"] = {
        "initialization_data": {"agent_data": {"reservations": {"EHGLP3": {"insurance": "yes"}}}},
        "initialization_actions": [
            {
                "env_type": "assistant",
                "func_name": "cancel_reservation",
                "arguments": {"reservation_id": "JMO1MG"},
            }
        ],
    }
    tasks[1]["evaluation_criteria"] = None
    edited = tmp_path / "tasks.json"
    edited.write_text(json.dumps(tasks))
    suite = _convert(tmp_path / "s", tasks=edited)
    task0 = _scenario(suite, "0")
    reservations = task0["environment"]["reservations"]
    assert reservations["EHGLP3"]["insurance"] == "yes"
    assert reservations["JMO1MG"]["status"] == "cancelled"
    assert set(task0["environment"]) == {"reservations"}  # only the tables the initial state changed
    assert task0["expected"]["environment"]["reservations"] == reservations  # no gold action: unchanged
    assert "expected" not in _scenario(suite, "3")
    assert "- 3: the task has no evaluation_criteria: nothing is checked" in (suite / "NOTES.md").read_text()


def test_a_table_that_differs_is_reported_by_its_differing_fields() -> None:
    from simulator.judging.tool_checks import state_differences

    wanted = {"A": {"status": None, "pay": [1]}, "B": {"x": 1}}
    actual = {"A": {"status": "cancelled", "pay": [1, -1]}, "C": {}}
    assert state_differences(actual, wanted, "reservations") == [
        "reservations.B is missing",
        "reservations.C is not expected",
        "reservations.A.status is 'cancelled', expected None",
        "reservations.A.pay has 2 items, expected 1",
    ]
    assert state_differences(wanted, wanted, "reservations") == []


def test_the_airline_tools_act_on_the_database() -> None:
    from simulator.tau2 import airline

    db = json.loads(DB.read_text())
    assert airline.calculate(db, "2 * 50 + 12 / 4") == "103.0"
    with pytest.raises(ValueError, match="only numbers"):
        airline.calculate(db, "__import__('os')")
    assert [f["flight_number"] for f in airline.search_direct_flight(db, "PHX", "SEA", "2024-05-17")] == [
        "HAT156"
    ]
    assert airline.search_direct_flight(db, "PHX", "SEA", "2024-05-18") == []
    assert airline.get_flight_status(db, "HAT156", "2024-05-17") == "available"
    with pytest.raises(KeyError, match="reservation NOPE00 not found"):
        airline.get_reservation_details(db, "NOPE00")
    bags = airline.update_reservation_baggages(db, "JMO1MG", 3, 2, "credit_card_2116")
    assert bags["payment_history"][-1] == {"payment_id": "credit_card_2116", "amount": 100}
    db["users"]["anya_garcia_5901"]["payment_methods"]["gift_card_1"] = {
        "source": "gift_card",
        "id": "gift_card_1",
        "amount": 30,
    }
    with pytest.raises(ValueError, match="not enough for 50"):
        airline.update_reservation_baggages(db, "JMO1MG", 4, 3, "gift_card_1")
    with pytest.raises(ValueError, match="number of passengers cannot change"):
        airline.update_reservation_passengers(db, "JMO1MG", [])
    airline.cancel_reservation(db, "JMO1MG")
    with pytest.raises(ValueError, match="already cancelled"):
        airline.cancel_reservation(db, "JMO1MG")


def test_a_simulated_user_reveals_the_known_information_when_asked(tmp_path: Path) -> None:
    suite = _convert(tmp_path / "s", bot="tests._tau2_agents:correct", task_ids=["19"])
    text = (suite / "suite.yaml").read_text()
    (suite / "suite.yaml").write_text(text.replace("model: auto", "model: offline"))
    assert main(["run", str(suite / "suite.yaml"), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    verdicts = _verdicts(tmp_path / "run")
    assert verdicts[("tau2-airline-19", "environment.reservations")]["result"] == "pass"
    record = json.loads((tmp_path / "run" / "conversations.jsonl").read_text().splitlines()[0])
    said = [
        " ".join(part["text"] for part in turn["parts"] if part["type"] == "text")
        for turn in record["turns"]
        if turn["role"] == "user"
    ]
    assert "olivia_gonzalez_2305" not in said[0]  # not volunteered in the opening
    assert any("My user id is olivia_gonzalez_2305." in line for line in said[1:])  # said when asked


@pytest.mark.parametrize(("agent", "verdict"), [("correct", "pass"), ("wrong", "fail")])
def test_natural_language_assertions_are_judged_as_criteria(tmp_path: Path, agent: str, verdict: str) -> None:
    suite = _convert(tmp_path / "s", scripted=True, bot=f"tests._tau2_agents:{agent}", task_ids=["0"])
    run = ["run", str(suite / "suite.yaml"), "--out", str(tmp_path / "run"), "--no-progress"]
    assert main([*run, "--judge-model", "test:tests._tau2_agents:judge"]) == 0
    judged = _verdicts(tmp_path / "run")[("tau2-airline-0", "tau2-airline-0-nl-1")]
    assert (judged["result"], judged["severity"], judged["category"]) == (verdict, "major", "tau2")


def test_action_in_the_reward_basis_requires_each_gold_call(tmp_path: Path) -> None:
    tasks = json.loads(TASKS.read_text())
    tasks[2]["evaluation_criteria"]["reward_basis"] = ["DB", "ACTION"]
    edited = tmp_path / "tasks.json"
    edited.write_text(json.dumps(tasks))
    verdicts = {}
    for agent in ("correct", "wrong"):
        suite = _convert(
            tmp_path / agent, tasks=edited, scripted=True, bot=f"tests._tau2_agents:{agent}", task_ids=["19"]
        )
        assert _scenario(suite, "19")["tool_checks"] == [
            {
                "tool_called": "cancel_reservation",
                "id": "tool_called.19_0-1",
                "arguments": {"reservation_id": {"equal": "Z7GOZK"}},
            }
        ]
        assert (
            main(["run", str(suite / "suite.yaml"), "--out", str(tmp_path / f"run-{agent}"), "--no-progress"])
            == 0
        )
        verdicts[agent] = _verdicts(tmp_path / f"run-{agent}")[("tau2-airline-19", "tool_called.19_0-1")][
            "result"
        ]
    assert verdicts == {"correct": "pass", "wrong": "fail"}


@pytest.mark.parametrize(
    ("ids", "said"),
    [
        (["0", "0"], "share one id"),  # the same id twice
        (["a/b", "a_b"], "would both be written as scenarios/tau2-airline-a_b.yaml"),  # / becomes _
        (["a b", "a_b"], "would both be written as"),  # a space too
        (["a:b", "a_b"], "would both be written as"),  # a colon is not kept in a scenario id
        (["Task1", "task1"], "would both be written as"),  # one file on a case-insensitive disk
        (["x" * 300 + "1", "x" * 300 + "2"], "would both be written as"),  # ids cut to a scenario id's length
        (["7", "7", "8", "8"], "2 task ids"),  # every collision named, not the first alone
    ],
)
def test_task_ids_that_collide_are_refused_never_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ids: list[str], said: str
) -> None:
    base = json.loads(TASKS.read_text())
    tasks = [{**base[n % len(base)], "id": task_id} for n, task_id in enumerate(ids)]
    (tmp_path / "t.json").write_text(json.dumps(tasks))
    args = ["--domain", "airline", "--db", str(DB), "--out", str(tmp_path / "o"), "--scripted"]
    assert main(["import-tau2", str(tmp_path / "t.json"), *args]) == 2
    err = capsys.readouterr().err
    assert "collide, so one task would replace another; give each task its own id" in err and said in err
    assert "position 1" in err and "position 2" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()
    if ids.count(ids[-1]) > 1:  # a repeated id chosen with --task is two tasks too
        assert main(["import-tau2", str(tmp_path / "t.json"), *args, "--task", ids[-1]]) == 2
    tasks[1]["id"] = "distinct"
    (tmp_path / "t.json").write_text(json.dumps(tasks[:2]))
    assert main(["import-tau2", str(tmp_path / "t.json"), *args]) == 0  # told apart: both written
    assert len(list((tmp_path / "o" / "scenarios").iterdir())) == 2
