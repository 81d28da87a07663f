"""Scenario: the YAML a person writes, the run it drives, and `harness run`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import textwrap
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

import harness.checking._runner as runner_module
from harness.checking._check import check
from harness.checking._runner import ScenarioProvider, arun, run
from harness.cli import main
from harness.scenarios._scenario import (
    Config,
    HistoryMessage,
    ModelTurn,
    NestedRun,
    Scenario,
    ScenarioError,
    ToolDef,
    effective_cap,
)
from harness.scenarios._scenario_parts import Behaviour, Call
from openprogram import function
from openprogram.agent.agent_loop import agent_loop
from openprogram.functions import registry
from tests.harness.support import console_script

ADD = ToolDef(
    name="add",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
    plan=(Behaviour("return", 5),),
)

HAND_WRITTEN = textwrap.dedent(
    """\
    name: add two numbers
    prompts: [Add 2 and 3]
    tools:
      - name: add
        parameters:
          type: object
          properties: {a: {type: integer}, b: {type: integer}}
          required: [a, b]
        plan:
          - return: 5
    turns:
      - calls:
          - {name: add, args: {a: 2, b: 3}}
      - The answer is 5.
    steering: {3: [thanks]}
    config: {max_iterations: 4, tool_choice: auto}
    """
)


def test_a_hand_written_scenario_reads_as_values() -> None:
    scenario = Scenario.from_yaml(HAND_WRITTEN)
    assert scenario.name == "add two numbers"
    assert scenario.tools == (ADD,)
    assert scenario.turns == (ModelTurn(calls=(Call("add", {"a": 2, "b": 3}),)), ModelTurn(text="The answer is 5."))
    assert scenario.steering == {3: ("thanks",)}
    assert scenario.config == Config(max_iterations=4, tool_choice="auto")


def test_yaml_round_trips_exactly_and_is_canonical() -> None:
    scenario = Scenario.from_yaml(HAND_WRITTEN)
    text = scenario.to_yaml()
    assert Scenario.from_yaml(text) == scenario
    assert Scenario.from_yaml(text).to_yaml() == text
    assert "- The answer is 5." in text  # a plain text reply stays a bare string


def test_every_turn_and_behaviour_kind_round_trips() -> None:
    nested = NestedRun(prompt="dig", tools=None, turns=(ModelTurn(text="x"),), steering={1: ("s",)}, sync=True)
    scenario = Scenario(
        prompts=("p1", "multi\nline prompt"),
        tools=(
            ToolDef(
                name="t",
                description="a tool",
                plan=(
                    Behaviour("return", {"k": [1, 2.5, None, True]}, updates=("10%", 3), cancel=True),
                    Behaviour("error", "bad"),
                    Behaviour("raise", ""),
                    Behaviour("exec", nested=nested),
                    Behaviour("return", None),
                ),
            ),
        ),
        turns=(
            ModelTurn(text="", thinking="hmm"),
            ModelTurn(calls=(Call("t", raw="{oops", id="x"), Call("t", {"a": "yes"})), text="t", stop="length"),
            ModelTurn(),
            ModelTurn(stop="length"),
            ModelTurn(kind="error", message="rate limited"),
            ModelTurn(kind="aborted"),
            ModelTurn(kind="raise", message="reset", calls=(Call("t"),)),
            ModelTurn(kind="hang_up", text="Once"),
            ModelTurn(text="true"),  # would read back as a boolean if written bare
        ),
        steering={2: ("a", "b")},
        follow_ups={1: ("more",)},
        config=Config(
            max_iterations=-3,
            tool_choice={"type": "function", "name": "t"},
            parallel_tool_calls=False,
            model="m",
            system_prompt="sys",
        ),
        notes="why this scenario exists",
        meta={"expect": {"reason": "stop"}},
    )
    text = scenario.to_yaml()
    assert Scenario.from_yaml(text) == scenario, text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "prompts: [a]\nturns: [{txt: hi}]",
            "scenario: turn 1: unknown key(s) txt (did you mean text?); "
            "allowed: calls, cancel, empty, fault, hang_up, message, raise, "
            "stop, text, thinking",
        ),
        ("turns: [{error: x, text: y}]", "scenario: turn 1: unknown key(s) text; allowed: error"),
        (
            "tools: [{name: a, plan: [{return: 1, raise: x}]}]",
            "scenario: tool 1, plan 1: give exactly one of return, error, raise, exec",
        ),
        ("tools: [{name: a}, {name: a}]", "scenario: two tools share the name(s) a"),
        ("steering: {0: [x]}", "scenario: steering poll 0: poll numbers start at 1, got 0"),
        (
            "turns: [{calls: [{name: a, args: [1]}]}]",
            "scenario: turn 1, call 1, args: expected a mapping, got [1]; "
            "for argument text that is not an object use raw:",
        ),
        ("turns: [{calls: [{name: a, args: {}, raw: x}]}]", "scenario: turn 1, call 1: give args or raw, not both"),
        (
            "tools: [{name: a, plan: [{exec: {tools: [b], turns: []}}]}]",
            "scenario: tool 'a': a nested run may use only planned tools; not planned here: ['b']",
        ),
        ("- just a list", "scenario: a scenario is a mapping (prompts:, tools:, turns:, ...)"),
        # located in the file's own words: 1-based positions, the keys as written
        ("turns: [hi, {calls: [{name: a}, {args: {}}]}]", "scenario: turn 2, call 2, name: required"),
        ("prompts: [a, 5]", "scenario: prompt 2: expected text, got 5 (quote it in YAML)"),
        ("prompts: 5", "scenario: prompts: expected text or a list, got 5"),
        ("turns: [5]", "scenario: turn 1: a turn is a text, or a mapping with text/thinking/calls, error or aborted"),
        ("turns: [{stop: halt}]", "scenario: turn 1, stop: expected 'stop' or 'length', got 'halt'"),
        ("turns: [{raise: x, cancel: true}]", "scenario: turn 1: only a reply can be cancelled while it streams"),
        (
            "tools: [{name: t, plan: [{exec: {prompt: p, turns: [ok, {txt: 1}]}}]}]",
            "scenario: tool 1, plan 1, exec, turn 2: unknown key(s) txt (did you mean text?); "
            "allowed: calls, cancel, empty, fault, "
            "hang_up, message, raise, stop, text, thinking",
        ),
        (
            "tools: [{name: t, plan: [{exec: {tools: 5}}]}]",
            "scenario: tool 1, plan 1, exec.tools: expected a list or 'inherit', got 5",
        ),
        ("tools: [{name: t, plan: [{return: 1, base: true}]}]", "scenario: tool 1, plan 1: base: true goes with raise"),
        ("history: [{assistant: x, calls: [{name: a}]}]", "scenario: history 1: calls in the history need an id"),
        ("config: {max_iterations: lots}", "scenario: config.max_iterations: expected an integer, got 'lots'"),
        ("steering: {2: [stop, 5]}", "scenario: steering poll 2, message 2: expected text, got 5 (quote it in YAML)"),
        (
            "turns: [{txt: 1}, {error: 2}, a, b, c, d, e, f, g, h, {calls: 3}]",
            "scenario: 3 problems:\n"
            "  turn 1: unknown key(s) txt (did you mean text?); "
            "allowed: calls, cancel, empty, fault, hang_up, message, raise, stop, "
            "text, thinking\n"
            "  turn 2, error: expected text, got 2 (quote it in YAML)\n"
            "  turn 11, calls: expected a list, got 3",
        ),
    ],
)
def test_malformed_yaml_says_where_and_what(text: str, message: str) -> None:
    with pytest.raises(ScenarioError) as raised:
        Scenario.from_yaml(text)
    assert str(raised.value) == message


def test_invalid_yaml_is_a_scenario_error() -> None:
    with pytest.raises(ScenarioError, match="scenario: not valid YAML"):
        Scenario.from_yaml("prompts: [")


def test_a_malformed_file_is_named_in_the_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("prompts: [hi]\nturns:\n  - calls:\n      - {name: add, args: 3}\n")
    with pytest.raises(ScenarioError) as raised:
        Scenario.from_yaml(path)
    assert str(raised.value).startswith(f"{path}: turn 1, call 1, args: expected a mapping, got 3")


def test_from_yaml_reads_a_path(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(HAND_WRITTEN)
    assert Scenario.from_yaml(path) == Scenario.from_yaml(str(path)) == Scenario.from_yaml(HAND_WRITTEN)


def test_run_drives_the_real_loop_and_records_the_ledger() -> None:
    trace = run(Scenario.from_yaml(HAND_WRITTEN))
    assert trace.reason == "stop"
    assert trace.max_iterations == 4
    assert [(e.tool_name, e.tool_call_id, e.arguments, e.text) for e in trace.ledger or ()] == [
        ("add", "call_1", {"a": 2, "b": 3}, "5")
    ]
    assert trace.final_text == "The answer is 5."
    assert [m.timestamp for m in trace.new_messages] == [1000, 1001, 1002, 1003, 1004]  # "thanks" came at poll 3
    assert len(trace.requests) == 2
    assert trace.requests[1].tool_choice == "auto"


def test_arun_works_inside_a_running_event_loop() -> None:
    trace = asyncio.run(arun(Scenario.from_yaml(HAND_WRITTEN)))
    assert trace.reason == "stop"


def test_the_same_scenario_gives_byte_identical_traces() -> None:
    scenario = Scenario.from_yaml(HAND_WRITTEN)
    assert run(scenario).to_json() == run(scenario).to_json()


def test_the_loop_is_injectable_and_patchable(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def spy(*args: object, **kwargs: object) -> object:
        seen.append("called")
        return agent_loop(*args, **kwargs)  # type: ignore[arg-type]

    scenario = Scenario.from_yaml(HAND_WRITTEN)
    run(scenario, loop=spy)
    assert seen == ["called"]
    monkeypatch.setattr(runner_module, "agent_loop", spy)
    run(scenario)
    assert seen == ["called", "called"]


def test_a_loop_that_fails_its_consumer_is_recorded_not_raised() -> None:
    def broken(*args: object, **kwargs: object) -> object:
        stream = agent_loop(*args, **kwargs)  # type: ignore[arg-type]

        class Failing:
            def __aiter__(self) -> Failing:
                return self

            async def __anext__(self) -> object:
                raise RuntimeError("stream exploded")

            async def result(self) -> object:
                return await stream.result()

        return Failing()

    trace = run(Scenario.from_yaml(HAND_WRITTEN), loop=broken)
    assert trace.error == "RuntimeError: stream exploded"
    assert not check(Scenario.from_yaml(HAND_WRITTEN), loop=broken).ok


def test_effective_cap_is_the_contract_formula() -> None:
    assert [effective_cap(v) for v in (None, 0, -5, 1, 7, 50, 51, 1000)] == [50, 1, 1, 1, 7, 50, 50, 50]


@function(register=False)
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def test_real_tools_run_the_users_code_and_save_as_an_import_path() -> None:
    tool = ToolDef.from_tool(shout, python="tests.harness.scenarios.test_scenario:shout")
    scenario = Scenario(
        prompts=("hi",),
        tools=(tool,),
        turns=(ModelTurn(calls=(Call("shout", {"text": "hey"}),)), ModelTurn(text="done")),
    )
    trace = run(scenario)
    assert [r.text for r in trace.tool_results] == ["HEY"]
    assert check(scenario).ok
    reloaded = Scenario.from_yaml(scenario.to_yaml())
    assert reloaded.tools[0].python == "tests.harness.scenarios.test_scenario:shout"
    assert [r.text for r in run(reloaded).tool_results] == ["HEY"]


def test_a_tool_cannot_be_both_real_and_planned() -> None:
    with pytest.raises(ScenarioError, match="cannot also have a plan"):
        ToolDef(name="x", python="m:x", plan=(Behaviour(),))


def test_nested_runs_can_inherit_only_an_all_planned_menu() -> None:
    nested = Behaviour("exec", nested=NestedRun(tools=None))
    with pytest.raises(ScenarioError, match="inherit the menu only when every tool has a plan"):
        Scenario(tools=(ToolDef(name="a", plan=(nested,)), ToolDef.from_tool(shout)))


def test_nesting_stops_at_the_limit() -> None:
    loop_forever = Behaviour(
        "exec", nested=NestedRun(tools=("deep",), turns=(ModelTurn(calls=(Call("deep"),)), ModelTurn(text="up")))
    )
    scenario = Scenario(
        tools=(ToolDef(name="deep", plan=(loop_forever,)),),
        turns=(ModelTurn(calls=(Call("deep"),)), ModelTurn(text="done")),
    )
    trace = run(scenario)
    assert trace.reason == "stop"
    assert check(scenario).ok
    assert trace.tool_results[0].text == "up"


def test_registry_is_untouched_by_scenarios() -> None:
    before = {fn.name for fn in registry}
    run(Scenario.from_yaml(HAND_WRITTEN))
    assert {fn.name for fn in registry} == before


def test_harness_run_checks_files_and_shows_the_trace(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(HAND_WRITTEN)
    result = CliRunner().invoke(main, ["run", str(good), "--show"])
    assert result.exit_code == 0, result.output
    assert "ok   " in result.output and "agent_end reason=stop" in result.output


def test_harness_run_exits_1_on_a_violated_expectation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(HAND_WRITTEN + "meta:\n  expect: {reason: error}\n")
    result = CliRunner().invoke(main, ["run", str(bad)])
    assert result.exit_code == 1
    assert "reason: expected 'error', got 'stop'" in result.output


def test_harness_run_reports_malformed_files(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("turns: [{txt: hi}]")
    result = CliRunner().invoke(main, ["run", str(broken)])
    assert result.exit_code == 2  # a file that cannot be used is a usage error, not a failed scenario
    assert "unknown key(s) txt" in result.output


def test_harness_run_takes_a_directory(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(HAND_WRITTEN)
    (tmp_path / "b.yml").write_text(HAND_WRITTEN)
    result = CliRunner().invoke(main, ["run", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "all 2 scenario(s) passed" in result.output


def test_history_resumes_with_agent_loop_continue_and_round_trips() -> None:
    scenario = Scenario.from_yaml(
        textwrap.dedent(
            """\
            prompts: []
            history:
              - user: What is 2 + 3?
              - assistant: null
                calls:
                  - {name: add, args: {a: 2, b: 3}, id: h1}
              - tool_result: '5'
                id: h1
                name: add
            tools:
              - name: add
            turns:
              - It is 5.
            """
        )
    )
    assert scenario.resumes
    assert Scenario.from_yaml(scenario.to_yaml()) == scenario
    trace = run(scenario)
    assert [m.role for m in trace.requests[0].messages] == ["user", "assistant", "toolResult"]
    assert [m.role for m in trace.new_messages] == ["assistant"]
    assert check(scenario).ok


def test_resuming_after_an_assistant_message_is_refused_at_call_time() -> None:
    scenario = Scenario(prompts=(), history=(HistoryMessage("user", "hi"), HistoryMessage("assistant", "hello")))
    trace = run(scenario)
    assert trace.events == [] and trace.requests == []
    assert (trace.error or "").startswith("ValueError: agent_loop_continue")
    assert check(scenario).ok


def test_a_base_exception_from_a_tool_is_raised_to_the_consumer() -> None:
    scenario = Scenario(
        tools=(ToolDef(name="t", plan=(Behaviour("raise", "killed", base=True),)),),
        turns=(ModelTurn(calls=(Call("t"),)), ModelTurn(text="never")),
    )
    trace = run(scenario)
    assert trace.error == "ToolKilled: killed"
    assert trace.reason is None
    assert [(e.outcome, e.text) for e in trace.ledger or ()] == [("raised", "killed")]
    assert check(scenario).ok


def test_a_user_cancelling_mid_stream_aborts_the_reply() -> None:
    scenario = Scenario(tools=(ToolDef(name="t"),), turns=(ModelTurn(calls=(Call("t"),), cancel=True),))
    trace = run(scenario)
    assert trace.reason == "aborted"
    assert trace.ledger == []
    assert check(scenario).ok


def test_result_details_reach_the_tool_result_message() -> None:
    scenario = Scenario(
        tools=(ToolDef(name="t", plan=(Behaviour("return", "x", details={"status": 200}),)),),
        turns=(ModelTurn(calls=(Call("t"),)), ModelTurn(text="done")),
    )
    assert [r.details for r in run(scenario).tool_results] == [{"status": 200}]
    assert check(scenario).ok


def test_the_provider_refuses_a_request_while_the_previous_stream_is_open() -> None:
    from openprogram.providers import ModelRequest

    provider = ScenarioProvider([ModelTurn(text="one"), ModelTurn(text="two")])

    async def leak() -> str:
        first = provider.stream(ModelRequest())
        async for event in first:
            if event.type == "done":
                break  # stop reading without closing the stream
        second = provider.stream(ModelRequest())
        try:
            await second.__anext__()
        except RuntimeError as exc:
            return str(exc)
        finally:
            await first.aclose()
        return "no error"

    assert asyncio.run(leak()) == "request 2 arrived while the stream of request 1 was still open"


def test_resume_true_on_an_empty_context_is_refused() -> None:
    scenario = Scenario(prompts=(), resume=True)
    assert scenario.resumes and Scenario.from_yaml(scenario.to_yaml()) == scenario
    assert "resume: true" in scenario.to_yaml()
    assert (run(scenario).error or "").startswith("ValueError: agent_loop_continue")
    assert check(scenario).ok
    with pytest.raises(ScenarioError, match="takes no prompts"):
        Scenario(prompts=("hi",), resume=True)


def test_a_loop_that_never_ends_its_stream_is_recorded_as_a_hang() -> None:
    async def never_ending() -> None:
        await asyncio.Event().wait()

    def hanging(*args: object, **kwargs: object) -> object:
        stream = agent_loop(*args, **kwargs)  # type: ignore[arg-type]

        class Hanging:
            def __aiter__(self) -> Hanging:
                return self

            async def __anext__(self) -> object:
                await never_ending()
                raise StopAsyncIteration

            async def result(self) -> object:
                return await stream.result()

        return Hanging()

    scenario = Scenario.from_yaml(HAND_WRITTEN)
    trace = run(scenario, loop=hanging, timeout=0.2)
    assert trace.error == "TimeoutError: the event stream did not end within 0.2s (a hang)"


# ---------------------------------------------------------------------------------------------
# The format as a JSON Schema, and the saved files
# ---------------------------------------------------------------------------------------------

SAVED = sorted((Path(__file__).resolve().parents[3] / "cassettes" / "scenarios").glob("*.yaml"))


@pytest.fixture(scope="module")
def printed_schema() -> jsonschema.Draft202012Validator:
    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.output)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _as_an_editor_sees(text: str) -> object:
    # YAML keys such as poll numbers are integers; an editor checks the JSON the file stands for
    return json.loads(json.dumps(yaml.safe_load(text)))


@pytest.mark.parametrize("path", SAVED, ids=lambda p: p.stem)
def test_every_saved_scenario_validates_against_the_printed_schema(
    path: Path, printed_schema: jsonschema.Draft202012Validator
) -> None:
    errors = [e.message for e in printed_schema.iter_errors(_as_an_editor_sees(path.read_text()))]
    assert errors == []


@pytest.mark.parametrize("path", SAVED, ids=lambda p: p.stem)
def test_every_saved_scenario_redumps_canonically(path: Path, printed_schema: jsonschema.Draft202012Validator) -> None:
    scenario = Scenario.from_yaml(path)
    text = scenario.to_yaml()
    assert Scenario.from_yaml(text) == scenario
    assert Scenario.from_yaml(text).to_yaml() == text
    assert list(printed_schema.iter_errors(_as_an_editor_sees(text))) == []


def test_the_printed_schema_describes_each_key_in_the_words_of_its_form(tmp_path: Path) -> None:
    # an editor shows these on hover: each is the docstring under the form's attribute; printed by
    # the installed command, in a fresh process, as a user asks for the schema
    done = subprocess.run([console_script(), "schema"], capture_output=True, text=True, check=True, cwd=tmp_path)
    schema = json.loads(done.stdout)
    behaviour = schema["$defs"]["BehaviourForm"]["properties"]
    assert behaviour["error"]["description"] == "Return an is_error result with this text."
    assert behaviour["raise"]["description"].startswith("Raise ``RuntimeError(TEXT)``")  # an aliased key
    assert all("description" in spec for spec in schema["$defs"]["LeaveForm"]["properties"].values())


def test_a_form_field_keeps_its_own_description_and_a_subclass_its_parents_docstrings() -> None:
    from pydantic import Field

    from harness.scenarios._yamlform import Form, describe_fields

    class ParentForm(Form):
        kept: int = 0
        """Documented under the parent."""
        given: int = Field(0, description="said in Field")
        """not this one"""

    class ChildForm(ParentForm):
        extra: str = ""
        """The child's own key."""
        bare: str = ""

    schema = describe_fields(ChildForm.model_json_schema(), ChildForm)
    described = {key: spec.get("description") for key, spec in schema["properties"].items()}
    assert described == {
        "kept": "Documented under the parent.",
        "given": "said in Field",
        "extra": "The child's own key.",
        "bare": None,
    }


@pytest.mark.parametrize(
    "text",
    [
        "turns: [{txt: hi}]",
        "turns: [5]",
        "tools: [{name: a, plan: [{return: 1, raise: x}]}]",
        "steering: {0: [x]}",
        "history: [{bot: hi}]",
        "config: {modle: x}",
        "config: {max_iterations: '5'}",
        "config: {parallel_tool_calls: 'yes'}",
        "config: {tool_choice: auot}",
        "config: {tool_choice: {type: function}}",
        "meta: {expect: {final_text: {contain: x}}}",
        "meta: {expect: {finaltext: x}}",
        "meta: {expect: {requests: two}}",
    ],
)
def test_the_schema_refuses_what_the_loader_refuses(text: str, printed_schema: jsonschema.Draft202012Validator) -> None:
    with pytest.raises(ScenarioError):
        Scenario.from_yaml(text)
    assert list(printed_schema.iter_errors(_as_an_editor_sees(text)))


def test_the_sugared_forms_are_what_is_written() -> None:
    scenario = Scenario(
        prompts=("Add 2 and 3",),
        tools=(ADD, ToolDef(name="dig", plan=(Behaviour("exec", nested=NestedRun(tools=None)),))),
        turns=(
            ModelTurn(calls=(Call("add", {"a": 2, "b": 3}),)),
            ModelTurn(kind="error", message="overloaded"),
            ModelTurn(),
            ModelTurn(text="The answer is 5."),
        ),
        steering={2: ("stop",)},
        history=(HistoryMessage("user", "earlier"),),
        config=Config(max_iterations=4),
    )
    assert scenario.to_yaml() == textwrap.dedent(
        """\
        prompts: [Add 2 and 3]
        history: [{user: earlier}]
        tools:
          - name: add
            parameters:
              type: object
              properties: {a: {type: integer}, b: {type: integer}}
              required: [a, b]
            plan: [{return: 5}]
          - name: dig
            parameters: {type: object, properties: {}}
            plan:
              - exec: {prompt: nested task, tools: inherit, turns: []}
        turns:
          - calls:
              - {name: add, args: {a: 2, b: 3}}
          - {error: overloaded}
          - {empty: true}
          - The answer is 5.
        steering: {2: [stop]}
        config: {max_iterations: 4}
        """
    )


def test_the_documented_example_and_short_forms_hold() -> None:
    doc = (Path(__file__).resolve().parents[3] / "docs" / "scenarios.md").read_text(encoding="utf-8")
    example = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert example.startswith("# yaml-language-server: $schema=")
    assert check(Scenario.from_yaml(example)).ok
    short = "prompts: hello\nsteering: {2: stop}\nturns: [{}, Done.]\ntools: [{name: add}]"
    long = (
        "prompts: [hello]\nsteering: {2: [stop]}\nturns: [{empty: true}, {text: Done.}]\n"
        "tools: [{name: add, parameters: {type: object, properties: {}}}]"
    )
    assert Scenario.from_yaml(short) == Scenario.from_yaml(long)
    assert Scenario.from_yaml("turns:\ntools:\nhistory:\n") == Scenario.from_yaml("{}")


@pytest.mark.parametrize(
    "config",
    [
        {"max_iterations": "5"},
        {"max_iterations": True},
        {"parallel_tool_calls": "yes"},
        {"tool_choice": "auot"},
        {"tool_choice": {"type": "function"}},
        {"tool_choice": {"type": "tool", "name": "x"}},
    ],
)
def test_a_config_exec_would_refuse_is_refused_in_python_too(config: dict[str, object]) -> None:
    with pytest.raises(ScenarioError):
        Config(**config)  # type: ignore[arg-type]


def test_a_config_exec_accepts_is_kept_as_given() -> None:
    config = Config(max_iterations=-3, tool_choice={"type": "function", "name": "add"}, parallel_tool_calls=False)
    assert Scenario(config=config).config == config
    assert Scenario.from_yaml(Scenario(config=config).to_yaml()).config == config


def test_notes_name_each_call_of_a_tool_the_menu_lacks() -> None:
    scenario = Scenario.from_yaml(
        "tools: [{name: add}]\nturns: [{calls: [{name: add}, {name: sub}]}, {calls: [{name: mul}]}]"
    )
    notes = scenario.notes_for_run()
    assert [note.split(" names ")[0] for note in notes] == ["turn 1, call 2", "turn 2, call 1"]
    assert "'sub', which is not on the menu (tools: add)" in notes[0]
    assert (
        Scenario.from_yaml("turns: [{calls: [{name: x}]}]")
        .notes_for_run()[0]
        .endswith("(tools: none): the loop answers it with the not-found error")
    )


def test_nested_turns_go_with_real_tools_only() -> None:
    with pytest.raises(ScenarioError, match="tool 1: tool 'a': nested_turns go with a real"):
        Scenario.from_yaml("tools: [{name: a, nested_turns: [hi]}]")


@pytest.mark.parametrize(
    "text",
    [
        "meta: {expect: {final_text: {contains: x}, results: [{prefix: '!'}, exact], executed: [{regex: '^a#'}]}}",
        "meta: {expect: {reason: max_iterations, requests: 2}, violation: reference}",
        "config: {tool_choice: {type: function, name: add}, parallel_tool_calls: false, max_iterations: -3}",
    ],
)
def test_the_schema_accepts_what_the_loader_accepts(text: str, printed_schema: jsonschema.Draft202012Validator) -> None:
    Scenario.from_yaml(text)
    assert [e.message for e in printed_schema.iter_errors(_as_an_editor_sees(text))] == []


def test_a_cancelled_reply_in_a_python_tools_nested_turns_is_refused_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its stop would end the outer run from inside the tool's body, which the reference model
    # cannot see: without the refusal every run of the file was reported as a loop violation.
    (tmp_path / "nested_cancel_tools.py").write_text(
        "from openprogram import agentic_function, runtime\n\n"
        "@agentic_function\n"
        "def summarize(topic: str) -> str:\n"
        '    """Ask a model."""\n'
        "    return runtime.exec(topic)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    text = (
        "tools: [{name: summarize, python: 'nested_cancel_tools:summarize', "
        "nested_turns: [{text: ok}, {text: s, cancel: true}]}]\n"
        "turns: [{calls: [{name: summarize, args: {topic: cats}}]}, done]"
    )
    with pytest.raises(ScenarioError, match=r"tool 'summarize': nested_turns 2 cancel\(s\) the reply") as refused:
        Scenario.from_yaml(text)
    assert "cancel a top-level reply instead" in str(refused.value)
    Scenario.from_yaml(text.replace(", cancel: true", ""))  # the same file without the cancel loads
