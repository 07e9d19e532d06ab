"""LangSmith importer on the files the LangSmith SDK itself produced (tests/fixtures/real/langsmith, see README).

Every expected value below was read from the fixture files by hand (the run's ``start_time``/``end_time``, its
``prompt_tokens``/``completion_tokens`` or the model's ``usage_metadata``, the feedback rows' ``score``), not
computed by the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from files import jsonl, write
from ragreplay.core.extract import extract_cases
from ragreplay.core.types import Conversation, Feedback, Message, Role, TokenUsage
from ragreplay.ingest import FieldMapping, detect_format, iter_conversations
from ragreplay.ingest.provenance import observing

REAL = Path(__file__).parent.parent / "fixtures" / "real" / "langsmith"
GOOD, BAD = Feedback.GOOD, Feedback.BAD
VACATION_Q = "How many vacation days do I get?"
CARRY_Q = "Can I carry unused days over?"
CARRY_A = "Yes, up to 5 unused vacation days carry over to the next year."
FILES = [
    "langgraph_agent_runs_feedback.jsonl",
    "openai_sdk_wrap_runs_feedback.jsonl",
    "langchain_rag_trees.json",
    "langchain_chat_select.jsonl",
    "bulk_export_langgraph.parquet",
]


def read(name: str | Path) -> dict[str, Conversation]:
    path = name if isinstance(name, Path) else REAL / name
    return {conv.id: conv for _, conv in iter_conversations(path, "langsmith", FieldMapping())}


def turns(conv: Conversation) -> list[tuple[object, ...]]:
    """Each AI message as (question, answer, feedback, chunk ids, latency ms, tokens)."""
    out = []
    for question, answer in zip(conv.messages[::2], conv.messages[1::2], strict=True):
        assert (question.role, answer.role) == (Role.HUMAN, Role.AI)
        latency = None if answer.latency_ms is None else round(answer.latency_ms, 3)
        chunks = [c.id for c in answer.retrieved]
        out.append((question.content, answer.content, answer.feedback, chunks, latency, answer.tokens))
    return out


@pytest.mark.parametrize("name", FILES)
def test_every_real_file_is_told_to_be_langsmith(name: str) -> None:
    assert detect_format(REAL / name) == "langsmith"


def test_langgraph_agent_list_runs_with_feedback_rows() -> None:
    # Client.list_runs of a LangGraph ReAct agent (15 runs a turn), then Client.list_feedback of those runs
    (conv,) = read("langgraph_agent_runs_feedback.jsonl").values()
    assert (conv.id, conv.user_id, conv.tags) == ("thread-hr-1", "u-17", {})
    assert turns(conv) == [
        # the root's outputs are the graph state {"messages": [...]}: the answer is its last AI message
        (VACATION_Q, "You get 25 vacation days a year.", GOOD, [], 185.563, TokenUsage(input=61, output=27)),
        (CARRY_Q, CARRY_A, BAD, [], 159.47, TokenUsage(input=181, output=33)),
    ]


def test_langgraph_bulk_export_parquet_reads_feedback_stats() -> None:
    # the same project as the bulk export writes it: JSON columns as text, feedback only as feedback_stats
    (conv,) = read("bulk_export_langgraph.parquet").values()
    assert (conv.id, conv.user_id) == ("thread-hr-1", "u-17")
    assert turns(conv) == [
        (VACATION_Q, "You get 25 vacation days a year.", GOOD, [], 185.563, TokenUsage(input=61, output=27)),
        (CARRY_Q, CARRY_A, BAD, [], 159.47, TokenUsage(input=181, output=33)),
    ]
    assert (
        conv.messages[0].ts is not None
        and conv.messages[0].ts.isoformat() == "2026-12-08T01:00:54.093459+00:00"
    )


def test_openai_sdk_wrap_openai_traceable_runs() -> None:
    # @traceable root (outputs {"output": ...}), a @traceable retriever ({"output": [documents]}), wrap_openai's
    # model run (outputs a chat.completion with usage_metadata); the first answer was voted 0 then 1
    (conv,) = read("openai_sdk_wrap_runs_feedback.jsonl").values()
    assert (conv.id, conv.user_id) == ("chat-9", "u-5")
    assert turns(conv) == [
        (
            "How do I reset my VPN password?",
            "Open the IT portal, go to Account > VPN and choose Reset password.",
            GOOD,
            ["it-12"],
            121.488,
            TokenUsage(input=43, output=15),
        ),
        (
            VACATION_Q,
            "You get 25 vacation days a year.",
            None,
            ["hb-7"],
            61.332,
            TokenUsage(input=44, output=9),
        ),
    ]
    chunk = conv.messages[1].retrieved[0]
    assert (
        chunk.text
        == "Reset the VPN password in the IT portal under Account > VPN; the helpdesk is at ext. 4357."
    )


def test_langchain_rag_run_trees_with_nested_child_runs() -> None:
    # read_run(load_child_runs=True) of each root, dumped with json.dump([run.dict() ...], default=str)
    (conv,) = read("langchain_rag_trees.json").values()
    assert (conv.id, conv.user_id) == ("conv-fin-7", "u-31")
    assert turns(conv) == [
        (
            "Who approves my expense reports?",
            "Your line manager approves them in the finance tool.",
            GOOD,
            ["fin-3"],
            66.979,
            TokenUsage(input=38, output=11),
        ),
        (
            "And how long does that take?",
            "Approval takes up to 5 working days.",
            BAD,
            ["fin-3"],
            72.369,
            TokenUsage(input=39, output=9),
        ),
    ]
    chunk = conv.messages[1].retrieved[0]
    assert (
        chunk.text == "Expense reports are approved by your line manager in the finance tool within 5 days."
    )


def test_langchain_chat_model_runs_selected_without_token_counts() -> None:
    # list_runs(select=[...]) leaves prompt_tokens out: the tokens are the AIMessage's usage_metadata
    (conv,) = read("langchain_chat_select.jsonl").values()
    assert conv.id == "thread-chat-3" and conv.user_id is None
    assert turns(conv) == [
        (VACATION_Q, "You get 25 vacation days a year.", None, [], 54.918, TokenUsage(input=26, output=9)),
        (CARRY_Q, CARRY_A, None, [], 60.943, TokenUsage(input=53, output=15)),
    ]
    assert conv.tags["model"] == "gpt-4o-mini"
    assert not any(key.startswith(("LANGSMITH_", "ls_")) for key in conv.tags)


def test_the_real_files_become_cases() -> None:
    cases, skips = extract_cases(read("langgraph_agent_runs_feedback.jsonl")["thread-hr-1"])
    assert [(c.query, c.old_answer, c.feedback) for c in cases] == [
        (VACATION_Q, "You get 25 vacation days a year.", GOOD),
        (CARRY_Q, CARRY_A, BAD),
    ]
    assert skips == []


def test_where_each_value_came_from() -> None:
    with observing() as seen:
        read("langgraph_agent_runs_feedback.jsonl")
    first, second = seen.origins["thread-hr-1"]
    assert first == {
        "session": "root run at langgraph_agent_runs_feedback.jsonl:30 extra.metadata.thread_id",
        "user_id": "root run at langgraph_agent_runs_feedback.jsonl:30 extra.metadata.user_id",
        "latency_ms": "root run at langgraph_agent_runs_feedback.jsonl:30 start_time, end_time",
        "question": "root run at langgraph_agent_runs_feedback.jsonl:30 inputs",
        "answer": "root run at langgraph_agent_runs_feedback.jsonl:30 outputs",
        "tokens": "root run at langgraph_agent_runs_feedback.jsonl:30 prompt_tokens/completion_tokens",
        "feedback": "feedback row at langgraph_agent_runs_feedback.jsonl:31, field score",
    }
    assert second["feedback"] == "feedback row at langgraph_agent_runs_feedback.jsonl:32, field score"
    assert seen.read["run llm"] == 4 and seen.read["run tool"] == 2 and seen.read["feedback row"] == 2
    assert seen.ignored == {
        "feedback 'correctness': not a feedback name": 1,
        "feedback_stats: the trace has feedback rows": 2,  # the rows are the votes the stats summarise
    }
    with observing() as seen:
        read("langchain_chat_select.jsonl")
    assert seen.origins["thread-chat-3"][0]["tokens"] == (
        "run llm at langchain_chat_select.jsonl:2 outputs.generations[-1].message.kwargs.usage_metadata"
    )
    with observing() as seen:
        read("bulk_export_langgraph.parquet")
    assert seen.origins["thread-hr-1"][0]["feedback"] == (
        "feedback_stats at bulk_export_langgraph.parquet:1, field feedback_stats.user_score"
    )


def test_runs_and_feedback_in_separate_files_of_a_folder(tmp_path: Path) -> None:
    lines = (REAL / "langgraph_agent_runs_feedback.jsonl").read_text().splitlines(keepends=True)
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "runs.jsonl").write_text("".join(line for line in lines if '"run_type"' in line))
    (folder / "feedback.jsonl").write_text("".join(line for line in lines if '"run_type"' not in line))
    assert [m.feedback for m in read(folder)["thread-hr-1"].messages] == [None, GOOD, None, BAD]


def test_feedback_rows_win_over_a_mixed_feedback_stats_mean(tmp_path: Path) -> None:
    # the wrap_openai file's first root has feedback_stats {"user_feedback": {"n": 2, "avg": 0.5}}: alone, a
    # problem (two votes that disagree); with the rows in the file, the later row wins
    rows = [
        json.loads(line) for line in (REAL / "openai_sdk_wrap_runs_feedback.jsonl").read_text().splitlines()
    ]
    runs_only = write(tmp_path, "runs.jsonl", jsonl(*(r for r in rows if "run_type" in r)))
    with pytest.raises(Exception, match=r"2 votes with mixed values \(mean 0.5\)"):
        read(runs_only)
    assert read(REAL / "openai_sdk_wrap_runs_feedback.jsonl")["chat-9"].messages[1].feedback is GOOD


def test_feedback_on_a_whole_project_is_left_out(tmp_path: Path) -> None:
    run = {"id": "r1", "run_type": "chain", "inputs": {"question": "q?"}, "outputs": {"answer": "a"}}
    on_project = {"key": "user_score", "score": 1, "run_id": None, "trace_id": None, "session_id": "p1"}
    (conv,) = read(write(tmp_path, "runs.jsonl", jsonl(run, on_project))).values()
    assert conv.messages == (Message(role=Role.HUMAN, content="q?"), Message(role=Role.AI, content="a"))


def test_a_runs_own_thread_id_groups_turns_when_its_metadata_names_none(tmp_path: Path) -> None:
    # newer GET /runs/{id} and /runs/query answers carry the thread as a top-level thread_id
    runs = [
        {"id": f"r{i}", "run_type": "chain", "thread_id": "th-1", "start_time": f"2026-01-05T16:4{i}:00",
         "inputs": {"messages": [{"type": "human", "content": q}]},
         "outputs": {"messages": [{"type": "human", "content": q}, {"type": "ai", "content": a}]}}
        for i, (q, a) in enumerate([("first?", "one"), ("second?", "two")])
    ]  # fmt: skip
    (conv,) = read(write(tmp_path, "runs.jsonl", jsonl(*runs))).values()
    assert conv.id == "th-1"
    assert [m.content for m in conv.messages] == ["first?", "one", "second?", "two"]


def test_a_folder_of_overlapping_exports_reads_each_run_once(tmp_path: Path) -> None:
    # the list_runs dump and the bulk export of one project side by side: the same 30 runs twice (the Parquet
    # file is read first, by name)
    folder = tmp_path / "exports"
    folder.mkdir()
    for name in ("langgraph_agent_runs_feedback.jsonl", "bulk_export_langgraph.parquet"):
        (folder / name).write_bytes((REAL / name).read_bytes())
    assert turns(read(folder)["thread-hr-1"]) == turns(
        read("langgraph_agent_runs_feedback.jsonl")["thread-hr-1"]
    )
    changed = json.loads((REAL / "langgraph_agent_runs_feedback.jsonl").read_text().splitlines()[29])
    changed["end_time"] = "2026-12-08T01:00:55Z"
    (folder / "later.jsonl").write_text(jsonl(changed))
    with pytest.raises(Exception, match=r"repeats bulk_export_langgraph.parquet:1 with other times"):
        read(folder)
