"""Targets: python (every return shape, sync/async, failures), fake, logged, and target-file errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import builders
from builders import make_history
from ragreplay.core.types import Answer, Case, Feedback, RetrievedChunk, TokenUsage
from ragreplay.errors import ConfigError
from ragreplay.targets.config import normalise_question, parse_target_config
from ragreplay.targets.fake import FakeTarget
from ragreplay.targets.loader import load_target, target_from_config
from ragreplay.targets.logged import NO_ANSWER, LoggedTarget
from ragreplay.targets.python import PythonTarget, plan_call

FIXTURES = Path(__file__).parent.parent / "fixtures" / "targets"


def make_case(
    query: str = "What is the leave policy?",
    conversation_id: str = "conv_001",
    turn_index: int = 3,
    old_answer: str = "25 days a year.",
    retrieved: tuple[RetrievedChunk, ...] = (),
) -> Case:
    """This file's usual case: a follow-up about Lisa, rated bad; its id follows the conversation and turn."""
    return builders.make_case(
        id=f"case_{conversation_id}_{turn_index}",
        conversation_id=conversation_id,
        turn_index=turn_index,
        query=query,
        history=make_history("Who is Lisa?", "Lisa is the HR lead."),
        old_answer=old_answer,
        feedback=Feedback.BAD,
        retrieved=retrieved,
        tags={"department": "hr"},
        user_id="u7",
    )


def write(tmp_path: Path, text: str, name: str = "target.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def python_yaml(tmp_path: Path, function: str, extra: str = "") -> Path:
    return write(
        tmp_path,
        f"target:\n  kind: python\n  function: {function}\n  python_path: [{str(FIXTURES)!r}]\n{extra}",
    )


# ---------------------------------------------------------------- python target


async def test_python_target_from_yaml_async_dict_shape() -> None:
    target = load_target(FIXTURES / "python.yaml")
    assert target.name == "sample-python"
    answer = await target.answer("How many days of leave?", make_case())
    assert answer.error is None
    assert answer.text == "async: How many days of leave?"
    assert answer.contexts == (
        RetrievedChunk(id="doc1#2", score=0.75, text="Leave is 25 days."),
        RetrievedChunk(id="7"),
    )
    assert answer.tokens == TokenUsage(input=120, output=30)
    assert answer.cost_usd == pytest.approx(0.002)
    assert answer.latency_ms is not None and answer.latency_ms >= 0
    await target.aclose()


@pytest.mark.parametrize(
    ("function", "expected_text", "expected_contexts"),
    [
        ("answer", "sync: Q?", ()),
        ("answer_with_case", "Q? [conv_001#3]", ()),
        ("answer_text_sources", "from sources", (RetrievedChunk(id="a"), RetrievedChunk(id="2"))),
        ("answer_tuple", "tuple answer", (RetrievedChunk(id="11", score=0.5), RetrievedChunk(id="x"))),
        ("answer_object", "object answer", (RetrievedChunk(id="z"),)),
        ("answer_kwargs", "Q?|u7|2|hr", ()),
    ],
)
async def test_python_target_return_shapes_and_signatures(
    tmp_path: Path, function: str, expected_text: str, expected_contexts: tuple[RetrievedChunk, ...]
) -> None:
    target = load_target(python_yaml(tmp_path, f"sample_rag:{function}"))
    answer = await target.answer("Q?", make_case())
    assert answer.error is None
    assert answer.text == expected_text
    assert answer.contexts == expected_contexts
    assert answer.latency_ms is not None


@pytest.mark.parametrize(
    ("function", "error_start"),
    [
        ("boom", "RuntimeError: index offline"),
        ("boom_async", "TimeoutError: vector store timed out"),
        ("bad_return", "ValueError: returned int"),
    ],
)
async def test_python_target_failures_become_answer_errors(
    tmp_path: Path, function: str, error_start: str
) -> None:
    target = load_target(python_yaml(tmp_path, f"sample_rag:{function}"))
    answer = await target.answer("Q?", make_case())
    assert answer.text == ""
    assert answer.error is not None and answer.error.startswith(error_start)
    assert answer.latency_ms is not None


async def test_python_factory_gets_options_and_is_closed() -> None:
    target = load_target(FIXTURES / "python_factory.yaml")
    assert target.name == "python_factory"
    answer = await target.answer("hello", make_case())
    assert answer.text == "v2: hello"
    sample = sys.modules["sample_rag"]
    built = sample.INSTANCES[-1]
    assert not built.closed
    await target.aclose()
    assert built.closed


async def test_python_target_wraps_a_callable_directly() -> None:
    async def rag(question: str, case: Case) -> str:
        return f"{question}/{case.user_id}"

    target = PythonTarget(rag, name="inline")
    assert (await target.answer("q", make_case())).text == "q/u7"
    assert target.version == PythonTarget(rag).version


def test_plan_call_positional_named_and_unfillable() -> None:
    def by_name(case: Case, question: str) -> str:
        return ""

    def case_then_unnamed(case: Case, text: str) -> str:
        return ""

    def with_default(q: str, k: int = 3) -> str:
        return ""

    def unfillable(q: str, c: Case, other: int) -> str:
        return ""

    assert plan_call(by_name) == ([], {"case": "case", "question": "question"})
    assert plan_call(case_then_unnamed) == ([], {"case": "case", "text": "question"})
    assert plan_call(with_default) == ([], {"q": "question"})
    with pytest.raises(ValueError, match="'other'"):
        plan_call(unfillable)


def test_python_version_changes_with_module_source(tmp_path: Path) -> None:
    module = tmp_path / "versioned_rag_mod.py"
    module.write_text("def answer(question):\n    return 'one'\n")
    cfg_path = write(
        tmp_path, "target:\n  kind: python\n  function: versioned_rag_mod:answer\n  python_path: ['.']\n"
    )
    first = load_target(cfg_path).version
    assert load_target(cfg_path).version == first
    module.write_text("def answer(question):\n    return 'two'\n")
    assert load_target(cfg_path).version != first


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("no_such_module_xyz:answer", "cannot import module 'no_such_module_xyz'"),
        ("sample_rag:missing", "has no attribute 'missing'"),
        ("sample_rag:NOT_A_FUNCTION", "is a int, not a function"),
        ("sample_rag:needs_mystery", "'mystery'"),
        ("sample_rag", "is not of the form 'module:function'"),
    ],
)
def test_bad_python_function_is_config_error(tmp_path: Path, function: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        load_target(python_yaml(tmp_path, function))
    assert str(tmp_path / "target.yaml") in str(info.value)
    assert "target.function" in str(info.value)


def test_options_without_factory_is_config_error(tmp_path: Path) -> None:
    path = python_yaml(tmp_path, "sample_rag:answer", "  options: {prefix: x}\n")
    with pytest.raises(ConfigError, match=r"target\.options.*factory: true"):
        load_target(path)


# ---------------------------------------------------------------- fake target


async def test_fake_target_from_yaml_matches_normalised_question_then_query() -> None:
    target = load_target(FIXTURES / "fake.yaml")
    assert target.name == "fake-demo"
    case = make_case()
    inline = await target.answer("  what IS the leave   policy  ", case)
    assert inline.text == "You get 25 days."
    from_file = await target.answer("who is lisa", case)
    assert from_file.text == "Lisa runs HR."
    assert from_file.contexts == (RetrievedChunk(id="doc12#3", score=0.81),)
    via_query = await target.answer("rewritten beyond recognition", make_case(query="Who is Lisa?!"))
    assert via_query.text == "Lisa runs HR."
    missing = await target.answer("unknown", make_case(query="also unknown"))
    assert missing.text == "I don't know."
    assert missing.error is None


async def test_fake_target_echoes_old_answer_and_waits() -> None:
    target = FakeTarget({}, echo_old_answer=True, latency_ms=30)
    answer = await target.answer("anything", make_case(old_answer="the old one"))
    assert answer.text == "the old one"
    assert answer.latency_ms is not None and answer.latency_ms >= 25


def test_fake_version_depends_on_answers() -> None:
    assert FakeTarget({"a": "x"}).version == FakeTarget({"A?": "x"}).version
    assert FakeTarget({"a": "x"}).version != FakeTarget({"a": "y"}).version


def test_fake_answers_file_problems(tmp_path: Path) -> None:
    path = write(tmp_path, "target:\n  kind: fake\n  answers_file: nope.json\n")
    with pytest.raises(ConfigError, match=r"target\.answers_file.*not found"):
        load_target(path)
    (tmp_path / "list.json").write_text("[1, 2]")
    path = write(tmp_path, "target:\n  kind: fake\n  answers_file: list.json\n")
    with pytest.raises(ConfigError, match="JSON object"):
        load_target(path)


def test_normalise_question() -> None:
    assert normalise_question("  What is\tthe  Leave policy?! ") == "what is the leave policy"
    assert normalise_question("¿Qué pasa?") == "qué pasa"
    assert normalise_question("C++") == "c++"


# ---------------------------------------------------------------- logged target


LOG = [
    make_case(query="Who is Lisa?", turn_index=1, old_answer="Lisa is the HR lead."),
    make_case(
        query="What is the leave policy?",
        turn_index=3,
        old_answer="25 days a year.",
        retrieved=(RetrievedChunk(id="doc4", score=0.5),),
    ),
    make_case(query="Where is the office?", conversation_id="conv_009", turn_index=1, old_answer="Berlin."),
]


async def test_logged_target_matches_by_turn() -> None:
    target = LoggedTarget.from_cases("oct", LOG, match="turn")
    answer = await target.answer("anything at all", make_case(query="different words", turn_index=3))
    assert answer.text == "25 days a year."
    assert answer.contexts == (RetrievedChunk(id="doc4", score=0.5),)
    missing = await target.answer("Where is the office?", make_case(conversation_id="conv_777", turn_index=1))
    assert missing.error == NO_ANSWER
    assert missing.text == ""


async def test_logged_target_matches_by_question() -> None:
    target = LoggedTarget.from_cases("oct", LOG, match="question")
    answer = await target.answer("where is the OFFICE", make_case(conversation_id="other", turn_index=9))
    assert answer.text == "Berlin."
    # the same turn but a different question does not match in question mode
    missing = await target.answer("Something new?", make_case(query="Something new?", turn_index=3))
    assert missing.error == NO_ANSWER


async def test_logged_target_default_tries_turn_then_question() -> None:
    target = LoggedTarget.from_cases("oct", LOG)
    by_turn = await target.answer("zzz", make_case(query="zzz", turn_index=1))
    assert by_turn.text == "Lisa is the HR lead."
    by_question = await target.answer("Where is the office?", make_case(conversation_id="new", turn_index=5))
    assert by_question.text == "Berlin."
    assert LoggedTarget.from_cases("oct", LOG).version != LoggedTarget.from_cases("oct", LOG[:2]).version


async def test_logged_target_reads_log_file_with_ingest() -> None:
    target = load_target(FIXTURES / "logged.yaml")
    assert target.name == "october"
    answer = await target.answer("?", make_case(conversation_id="conv_001", turn_index=3))
    assert answer.text == "25 days a year."
    missing = await target.answer("?", make_case(conversation_id="conv_001", turn_index=7))
    assert missing.error == NO_ANSWER


async def test_logged_target_uses_inline_field_mapping(tmp_path: Path) -> None:
    line = (FIXTURES / "october.jsonl").read_text().replace('"id": "conv_001"', '"session": "s1"')
    (tmp_path / "renamed.jsonl").write_text(line)
    path = write(
        tmp_path,
        "target:\n  kind: logged\n  log: renamed.jsonl\n  format: canonical\n"
        "  mapping: {fields: {session: id}}\n  match: question\n",
    )
    target = load_target(path)
    answer = await target.answer("who is lisa?", make_case(conversation_id="elsewhere"))
    assert answer.text == "Lisa is the HR lead."
    assert answer.contexts == (RetrievedChunk(id="doc12#3", score=0.81),)
    bad = write(
        tmp_path, "target:\n  kind: logged\n  log: renamed.jsonl\n  mapping: {fields: {session: nope}}\n"
    )
    with pytest.raises(ConfigError, match=r"target\.mapping"):
        load_target(bad)


async def test_logged_target_answers_from_unlabelled_log(tmp_path: Path) -> None:
    # a candidate period's log usually carries no feedback: every answered turn must still be found
    conv = {
        "id": "k1",
        "messages": [
            {"role": "human", "content": "Q one?"},
            {"role": "ai", "content": "A one."},
            {"role": "human", "content": "Q two?"},
            {"role": "ai", "content": "A two."},
        ],
    }
    (tmp_path / "nov.jsonl").write_text(json.dumps(conv) + "\n")
    target = load_target(write(tmp_path, "target:\n  kind: logged\n  log: nov.jsonl\n"))
    assert (await target.answer("?", make_case(conversation_id="k1", turn_index=3))).text == "A two."
    assert (await target.answer("q one", make_case(conversation_id="zz", turn_index=9))).text == "A one."


def test_logged_target_missing_log_is_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, "target:\n  kind: logged\n  log: ../nowhere.jsonl\n")
    with pytest.raises(ConfigError, match=r"target\.log.*not found"):
        load_target(path)


# ---------------------------------------------------------------- target files


def test_invalid_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "target:\n  kind: fake\n  answers: {a: b\n")
    with pytest.raises(ConfigError) as info:
        load_target(path)
    message = str(info.value)
    assert f"{path}:" in message and "invalid YAML" in message


def test_unknown_kind_lists_allowed_kinds(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\ntarget:\n  kind: grpc\n")
    with pytest.raises(ConfigError) as info:
        load_target(path)
    message = str(info.value)
    assert f"{path}:3: field 'target.kind' unknown target kind 'grpc'" in message
    assert "python, http, logged, fake" in message


def test_missing_and_unknown_fields_name_their_path_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "target:\n  kind: http\n  answer_path: a.b\n  timeout: 3\n")
    with pytest.raises(ConfigError) as info:
        load_target(path)
    message = str(info.value)
    assert "field 'target.url' required field is missing" in message
    assert f"{path}:4: field 'target.timeout' unknown field" in message


def test_missing_kind_and_non_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'kind' is missing"):
        load_target(write(tmp_path, "target:\n  url: http://x\n"))
    with pytest.raises(ConfigError, match="must be a YAML mapping"):
        load_target(write(tmp_path, "- just\n- a list\n"))
    with pytest.raises(ConfigError, match="target file not found"):
        load_target(tmp_path / "absent.yaml")


def test_bad_value_names_field(tmp_path: Path) -> None:
    path = write(tmp_path, "target:\n  kind: http\n  url: http://x\n  method: DELETE\n  max_concurrency: 0\n")
    with pytest.raises(ConfigError) as info:
        load_target(path)
    message = str(info.value)
    assert "field 'target.method'" in message and "'GET'" in message
    assert "field 'target.max_concurrency'" in message


def test_embedded_target_config_and_target_from_config(tmp_path: Path) -> None:
    cfg = parse_target_config({"kind": "fake", "answers": {"q": "a"}}, "settings.yaml")
    target = target_from_config(cfg, tmp_path, "embedded")
    assert target.name == "embedded"
    with pytest.raises(ConfigError, match=r"settings\.yaml: field 'target\.kind'"):
        parse_target_config({"kind": "nope"}, "settings.yaml")


def test_version_ignores_spelling_of_defaults(tmp_path: Path) -> None:
    plain = load_target(write(tmp_path, "target:\n  kind: fake\n", "a.yaml"))
    explicit = load_target(write(tmp_path, 'target:\n  kind: fake\n  default: "I don\'t know."\n', "b.yaml"))
    changed = load_target(write(tmp_path, "target:\n  kind: fake\n  default: nope\n", "c.yaml"))
    assert plain.version == explicit.version != changed.version


async def test_answer_is_frozen_model() -> None:
    answer = await FakeTarget({"q": "a"}).answer("q", make_case())
    assert isinstance(answer, Answer)


def test_a_module_beside_the_target_file_imports_without_python_path(tmp_path: Path) -> None:
    folder = tmp_path / "targets"
    folder.mkdir()
    (folder / "beside_rag_mod.py").write_text("def answer(question):\n    return 'beside'\n")
    cfg_path = write(folder, "target:\n  kind: python\n  function: beside_rag_mod:answer\n")
    assert isinstance(load_target(cfg_path), PythonTarget)
