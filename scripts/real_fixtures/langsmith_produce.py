"""Produce the LangSmith fixtures of ``tests/fixtures/real/langsmith/`` with the LangSmith SDK itself.

Real applications (LangGraph, LangChain LCEL, the OpenAI SDK wrapped by ``langsmith.wrappers.wrap_openai``)
run against a mock OpenAI-compatible endpoint on 127.0.0.1, with tracing sent to a loopback server that
implements just enough of the LangSmith API: it stores what the SDK uploads (``POST /runs/batch``, ``/runs``,
``PATCH /runs/{id}``) and the feedback ``Client.create_feedback`` posts, and answers ``POST /runs/query``,
``GET /runs/{id}``, ``GET /sessions`` and ``GET /feedback`` from them, so that ``Client.list_runs``,
``Client.read_run(..., load_child_runs=True)`` and ``Client.list_feedback`` run for real and their results are
dumped as a user would (``model_dump(mode="json")`` per line, or ``run.dict()`` with ``json.dump``).
What the real server adds to a run and the SDK cannot send is filled the way LangSmith fills it: ``status``,
``session_id`` (the project's id), ``parent_run_ids`` (from ``dotted_order``), token counts (a model run's
usage, summed up its ancestors) and ``feedback_stats`` (per key: ``n``, ``avg``, string ``values`` counted).
The bulk export's Parquet file is written with pyarrow from the same stored runs, with the columns LangSmith
documents for it (docs.langchain.com/langsmith/data-export, "Exportable fields"): JSON columns as JSON text,
times as UTC timestamps (``format_version: v2_beta``), zstd compression (the default).

Not run in CI. Needs its own virtual environment with (the versions the committed files were made with)::

    pip install langsmith==0.15.1 langchain-core==1.8.3 langchain-openai==1.8.1 langgraph==1.2.24 \
        openai==3.63.0 pyarrow==26.0.1

Run: ``python scripts/real_fixtures/langsmith_produce.py tests/fixtures/real/langsmith``
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

TENANT_ID = "5c1b3a52-7f0e-4d6a-9a0c-2b8f3f1d9e01"
KNOWLEDGE = {
    "vacation": (
        "hb-7",
        "Full-time employees get 25 vacation days a year; up to 5 unused days carry over to the next year.",
    ),
    "vpn": (
        "it-12",
        "Reset the VPN password in the IT portal under Account > VPN; the helpdesk is at ext. 4357.",
    ),
    "expense": (
        "fin-3",
        "Expense reports are approved by your line manager in the finance tool within 5 days.",
    ),
}


def knowledge_for(text: str) -> tuple[str, str]:
    """The knowledge-base entry (id, text) a question is about."""
    lowered = text.lower()
    for word, entry in KNOWLEDGE.items():
        if word in lowered or (word == "vacation" and ("carry" in lowered or "days" in lowered)):
            return entry
    return KNOWLEDGE["expense"]


ANSWERS = {
    "How many vacation days do I get?": "You get 25 vacation days a year.",
    "Can I carry unused days over?": "Yes, up to 5 unused vacation days carry over to the next year.",
    "How do I reset my VPN password?": "Open the IT portal, go to Account > VPN and choose Reset password.",
    "Who approves my expense reports?": "Your line manager approves them in the finance tool.",
    "And how long does that take?": "Approval takes up to 5 working days.",
}


# --- the mock OpenAI-compatible endpoint ------------------------------------------------------------------


def _user_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def chat_completion(body: dict[str, Any]) -> dict[str, Any]:
    """A chat completion for ``body``: a tool call first when tools are offered, else the known answer."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    question = next((_user_text(m) for m in reversed(messages) if m.get("role") == "user"), "")
    prompt_tokens = sum(len(_user_text(m).split()) for m in messages) + 7 * len(messages)
    message: dict[str, Any]
    if body.get("tools") and last.get("role") == "user":
        name = body["tools"][0]["function"]["name"]
        call = {
            "id": "call_" + uuid.uuid5(uuid.NAMESPACE_URL, question).hex[:24],
            "type": "function",
            "function": {"name": name, "arguments": json.dumps({"query": question})},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        completion_tokens = 18
        finish = "tool_calls"
    else:
        answer = ANSWERS.get(question.strip(), "I could not find that in the handbook.")
        message = {"role": "assistant", "content": answer}
        completion_tokens = len(answer.split()) + 2
        finish = "stop"
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "system_fingerprint": "fp_mock",
    }


class OpenAIHandler(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions`` answered by :func:`chat_completion`."""

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if not self.path.endswith("/chat/completions"):
            self.send_error(404)
            return
        time.sleep(0.05)  # a model takes its time
        _send_json(self, chat_completion(body))


# --- the loopback LangSmith API -------------------------------------------------------------------------


def _send_json(handler: BaseHTTPRequestHandler, value: Any, status: int = 200) -> None:
    data = json.dumps(value).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _usage(outputs: Any) -> tuple[int, int] | None:
    """A model run's (input, output) tokens from what the SDK uploaded, as LangSmith reads them."""
    if not isinstance(outputs, dict):
        return None
    usage = outputs.get("usage_metadata")
    if isinstance(usage, dict):
        return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    for generation_list in outputs.get("generations") or []:
        for generation in generation_list if isinstance(generation_list, list) else [generation_list]:
            kwargs = ((generation or {}).get("message") or {}).get("kwargs") or {}
            usage = kwargs.get("usage_metadata")
            if isinstance(usage, dict):
                return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    token_usage = (outputs.get("llm_output") or {}).get("token_usage")
    if isinstance(token_usage, dict):
        return int(token_usage.get("prompt_tokens") or 0), int(token_usage.get("completion_tokens") or 0)
    return None


class Store:
    """What the loopback LangSmith server was sent: runs (post merged with patch), projects, feedback."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.raw: dict[str, dict[str, Any]] = {}
        self.projects: dict[str, str] = {}
        self.feedback: list[dict[str, Any]] = []

    def upsert(self, run: dict[str, Any]) -> None:
        """Merge one uploaded run (a create or an update) into what is stored."""
        with self.lock:
            run_id = str(run["id"])
            merged = self.raw.setdefault(run_id, {})
            merged.update({k: v for k, v in run.items() if v is not None})
            name = merged.get("session_name") or "default"
            self.projects.setdefault(name, str(uuid.uuid5(uuid.NAMESPACE_URL, "project:" + name)))

    def runs(self) -> list[dict[str, Any]]:
        """Every stored run as the LangSmith API returns it."""
        with self.lock:
            raw = [dict(r) for r in self.raw.values()]
        by_id = {str(r["id"]): r for r in raw}
        ancestors = {rid: _ancestors(r) for rid, r in by_id.items()}
        tokens: dict[str, list[int]] = {rid: [0, 0] for rid in by_id}
        for rid, run in by_id.items():
            usage = _usage(run.get("outputs")) if run.get("run_type") == "llm" else None
            if usage is None:
                continue
            for target in [rid, *ancestors[rid]]:
                if target in tokens:
                    tokens[target][0] += usage[0]
                    tokens[target][1] += usage[1]
        return [self._api_run(r, ancestors[str(r["id"])], tokens[str(r["id"])]) for r in raw]

    def _api_run(self, run: dict[str, Any], ancestors: list[str], tokens: list[int]) -> dict[str, Any]:
        run_id = str(run["id"])
        project = self.projects[run.get("session_name") or "default"]
        start = run.get("start_time")
        return {
            "id": run_id,
            "name": run.get("name"),
            "start_time": start,
            "run_type": run.get("run_type"),
            "end_time": run.get("end_time"),
            "extra": run.get("extra"),
            "error": run.get("error"),
            "serialized": None,
            "events": run.get("events"),
            "inputs": run.get("inputs"),
            "outputs": run.get("outputs"),
            "reference_example_id": run.get("reference_example_id"),
            "parent_run_id": run.get("parent_run_id"),
            "tags": run.get("tags") or [],
            "session_id": project,
            "child_run_ids": None,
            "feedback_stats": self._stats(run_id),
            "app_path": f"/o/{TENANT_ID}/projects/p/{project}/r/{run_id}?trace_id={run.get('trace_id')}"
            f"&start_time={start}",
            "status": "error" if run.get("error") else "success",
            "prompt_tokens": tokens[0],
            "completion_tokens": tokens[1],
            "total_tokens": tokens[0] + tokens[1],
            "first_token_time": None,
            "total_cost": None,
            "prompt_cost": None,
            "completion_cost": None,
            "parent_run_ids": ancestors,
            "trace_id": run.get("trace_id"),
            "dotted_order": run.get("dotted_order"),
            "in_dataset": False,
        }

    def _stats(self, run_id: str) -> dict[str, Any] | None:
        rows = [f for f in self.feedback if str(f.get("run_id")) == run_id]
        if not rows:
            return None
        stats: dict[str, Any] = {}
        for key in dict.fromkeys(str(f["key"]) for f in rows):
            of_key = [f for f in rows if f["key"] == key]
            scores = [float(f["score"]) for f in of_key if isinstance(f.get("score"), int | float)]
            values: dict[str, int] = {}
            for f in of_key:
                if isinstance(f.get("value"), str):
                    values[f["value"]] = values.get(f["value"], 0) + 1
            stats[key] = {
                "n": len(scores),
                "avg": sum(scores) / len(scores) if scores else None,
                "show_feedback_arrow": True,
                "values": values,
            }
        return stats


def _ancestors(run: dict[str, Any]) -> list[str]:
    """The ids of a run's ancestors, root first, from its ``dotted_order``."""
    parts = str(run.get("dotted_order") or "").split(".")
    return [part.split("Z", 1)[1] for part in parts[:-1] if "Z" in part]


def _query(runs: list[dict[str, Any]], body: dict[str, Any]) -> list[dict[str, Any]]:
    sessions = body.get("session") or ([body["session_id"]] if body.get("session_id") else None)
    selected = []
    for run in runs:
        if sessions and run["session_id"] not in [str(s) for s in sessions]:
            continue
        if body.get("is_root") is not None and (run["parent_run_id"] is None) != bool(body["is_root"]):
            continue
        if body.get("trace") and run["trace_id"] != str(body["trace"]):
            continue
        if body.get("id") and run["id"] not in [str(i) for i in body["id"]]:
            continue
        if body.get("run_type") and run["run_type"] != body["run_type"]:
            continue
        selected.append(run)
    selected.sort(key=lambda r: str(r["start_time"]), reverse=True)  # newest first, as LangSmith lists them
    select = body.get("select")
    if select:
        keep = {*select, "id"}
        selected = [{k: v for k, v in r.items() if k in keep} for r in selected]
    return selected


def make_langsmith_handler(store: Store) -> type[BaseHTTPRequestHandler]:
    """The request handler of the loopback LangSmith API over ``store``."""

    class LangSmithHandler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _body(self) -> Any:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            return json.loads(data) if data else None

        def do_GET(self) -> None:
            url = urlparse(self.path)
            params = parse_qs(url.query)
            if url.path == "/info":
                config = {
                    "use_multipart_endpoint": False,
                    "size_limit": 100,
                    "size_limit_bytes": 20_971_520,
                    "scale_up_qsize_trigger": 1000,
                    "scale_up_nthreads_limit": 16,
                    "scale_down_nempty_trigger": 4,
                }
                _send_json(self, {"version": "0.10.0", "batch_ingest_config": config, "instance_flags": {}})
            elif url.path == "/sessions":
                names = params.get("name") or list(store.projects)
                found = [
                    {"id": store.projects[n], "name": n, "tenant_id": TENANT_ID, "reference_dataset_id": None}
                    for n in names
                    if n in store.projects
                ]
                _send_json(self, found)
            elif url.path.startswith("/runs/"):
                run_id = url.path.rsplit("/", 1)[1]
                found_runs = [r for r in store.runs() if r["id"] == run_id]
                _send_json(self, found_runs[0]) if found_runs else self.send_error(404)
            elif url.path == "/feedback":
                wanted = set(params.get("run") or [])
                rows = [f for f in store.feedback if not wanted or str(f.get("run_id")) in wanted]
                offset = int((params.get("offset") or ["0"])[0])
                limit = int((params.get("limit") or ["100"])[0])
                _send_json(self, rows[offset : offset + limit])
            else:
                self.send_error(404)

        def do_POST(self) -> None:
            path = urlparse(self.path).path
            if path == "/runs/multipart":
                self.send_error(404)
                return
            body = self._body()
            if path == "/runs/batch":
                for run in [*(body.get("post") or []), *(body.get("patch") or [])]:
                    store.upsert(run)
                _send_json(self, {})
            elif path == "/runs":
                store.upsert(body)
                _send_json(self, {})
            elif path == "/runs/query":
                _send_json(self, {"runs": _query(store.runs(), body), "cursors": {"next": None}})
            elif path == "/feedback":
                run = store.raw.get(str(body.get("run_id")), {})
                row = {"trace_id": run.get("trace_id"), "comment": None, "value": None, **body}
                store.feedback.append(row)
                _send_json(self, row)
            else:
                self.send_error(404)

        def do_PATCH(self) -> None:
            path = urlparse(self.path).path
            body = self._body()
            if path.startswith("/runs/"):
                store.upsert({**body, "id": path.rsplit("/", 1)[1]})
                _send_json(self, {})
            else:
                self.send_error(404)

    return LangSmithHandler


def serve(handler: type[BaseHTTPRequestHandler]) -> str:
    """Start ``handler`` on a free loopback port in a daemon thread; its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


# --- the applications -------------------------------------------------------------------------------------


def run_langgraph_agent(openai_url: str) -> None:
    """A LangGraph ReAct agent with a handbook tool: a two-turn thread."""
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent

    @tool  # type: ignore[misc, untyped-decorator, unused-ignore]
    def search_handbook(query: str) -> str:
        """Search the employee handbook."""
        return knowledge_for(query)[1]

    model = ChatOpenAI(model="gpt-4o-mini", base_url=openai_url + "/v1", api_key="sk-mock", temperature=0)
    agent = create_react_agent(model, [search_handbook], checkpointer=InMemorySaver())
    for thread, user, question in [
        ("thread-hr-1", "u-17", "How many vacation days do I get?"),
        ("thread-hr-1", "u-17", "Can I carry unused days over?"),
    ]:
        config = {"configurable": {"thread_id": thread}, "metadata": {"user_id": user}}
        agent.invoke({"messages": [{"role": "user", "content": question}]}, config)


def run_langchain_rag(openai_url: str) -> None:
    """An LCEL RAG chain (retriever, prompt, chat model, parser): two turns of one conversation."""
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnablePassthrough
    from langchain_openai import ChatOpenAI

    class HandbookRetriever(BaseRetriever):  # type: ignore[misc, unused-ignore]
        """The handbook entry a question is about."""

        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            doc_id, text = knowledge_for(query)
            return [Document(id=doc_id, page_content=text, metadata={"source": "handbook.md"})]

    def format_docs(docs: list[Any]) -> str:
        return "\n\n".join(d.page_content for d in docs)

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the handbook:\n{context}"), ("human", "{question}")]
    )
    model = ChatOpenAI(model="gpt-4o-mini", base_url=openai_url + "/v1", api_key="sk-mock", temperature=0)
    chain = (
        {"context": HandbookRetriever() | format_docs, "question": RunnablePassthrough()}
        | prompt
        | model
        | StrOutputParser()
    )
    for question in ["Who approves my expense reports?", "And how long does that take?"]:
        chain.invoke(question, {"metadata": {"conversation_id": "conv-fin-7", "user_id": "u-31"}})


def run_openai_sdk(openai_url: str) -> None:
    """The OpenAI SDK wrapped by ``wrap_openai`` under ``@traceable`` functions: retrieval, then the model."""
    from langsmith import traceable
    from langsmith.wrappers import wrap_openai
    from openai import OpenAI

    client = wrap_openai(OpenAI(base_url=openai_url + "/v1", api_key="sk-mock"))

    @traceable(run_type="retriever", name="search_docs")  # type: ignore[misc, untyped-decorator, unused-ignore]
    def search_docs(query: str) -> list[dict[str, Any]]:
        doc_id, text = knowledge_for(query)
        return [{"page_content": text, "type": "Document", "metadata": {"id": doc_id}}]

    @traceable(name="support_bot")  # type: ignore[misc, untyped-decorator, unused-ignore]
    def support_bot(question: str) -> str:
        docs = search_docs(question)
        context = "\n".join(d["page_content"] for d in docs)
        response = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {"role": "system", "content": "Answer from these notes:\n" + context},
                {"role": "user", "content": question},
            ],
        )
        return str(response.choices[0].message.content)

    for session, question in [
        ("chat-9", "How do I reset my VPN password?"),
        ("chat-9", "How many vacation days do I get?"),
    ]:
        support_bot(question, langsmith_extra={"metadata": {"session_id": session, "user_id": "u-5"}})


def run_langchain_chat(openai_url: str) -> None:
    """A LangChain chat model called directly (the model run is the root): two turns of a thread."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model="gpt-4o-mini", base_url=openai_url + "/v1", api_key="sk-mock", temperature=0)
    system = SystemMessage("You are the HR assistant.")
    first = "How many vacation days do I get?"
    config = {"metadata": {"thread_id": "thread-chat-3"}}
    reply = model.invoke([system, HumanMessage(first)], config)
    model.invoke([system, HumanMessage(first), AIMessage(reply.content), HumanMessage(ANSWERS_Q2)], config)


ANSWERS_Q2 = "Can I carry unused days over?"


# --- the dumps --------------------------------------------------------------------------------------------


def _roots(client: Any, project: str) -> list[Any]:
    return [r for r in client.list_runs(project_name=project) if r.parent_run_id is None]


def _dump_lines(path: Path, items: list[Any]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for item in items:
            fh.write(json.dumps(item.model_dump(mode="json")) + "\n")


def produce(out: Path, store: Store, openai_url: str) -> None:
    """Run the applications, leave feedback, and dump each project as its own file under ``out``."""
    import langsmith
    from langsmith import Client
    from langsmith.run_trees import get_cached_client

    apps: list[tuple[str, Callable[[str], None]]] = [
        ("langgraph-agent", run_langgraph_agent),
        ("langchain-rag", run_langchain_rag),
        ("openai-sdk", run_openai_sdk),
        ("langchain-chat", run_langchain_chat),
    ]
    for project, app in apps:
        with langsmith.tracing_context(project_name=project, enabled=True):
            app(openai_url)
        time.sleep(0.2)
    get_cached_client().flush()
    client = Client()

    # user feedback, as an app's thumbs buttons send it; an LLM judge's score is not a user's
    graph_roots = sorted(_roots(client, "langgraph-agent"), key=lambda r: r.start_time)
    client.create_feedback(graph_roots[0].id, key="user_score", score=1, comment="exactly what I needed")
    client.create_feedback(graph_roots[1].id, key="user_score", score=0, comment="it did not say how many")
    client.create_feedback(graph_roots[0].id, key="correctness", score=1, feedback_source_type="model")
    rag_roots = sorted(_roots(client, "langchain-rag"), key=lambda r: r.start_time)
    client.create_feedback(rag_roots[0].id, key="thumbs", score=1, value="up")
    client.create_feedback(rag_roots[1].id, key="thumbs", score=0, value="down")
    sdk_roots = sorted(_roots(client, "openai-sdk"), key=lambda r: r.start_time)
    client.create_feedback(sdk_roots[0].id, key="user_feedback", score=0)
    client.create_feedback(
        sdk_roots[0].id, key="user_feedback", score=1, comment="changed my mind: it worked"
    )

    # Client.list_runs of a project, runs then their feedback, one model_dump(mode="json") per line
    for project, name in [("langgraph-agent", "langgraph_agent"), ("openai-sdk", "openai_sdk_wrap")]:
        runs = list(client.list_runs(project_name=project))
        feedback = list(client.list_feedback(run_ids=[r.id for r in runs]))
        _dump_lines(out / f"{name}_runs_feedback.jsonl", runs + feedback)
    # root runs with their child runs nested, run.dict() written by json.dump
    trees = [client.read_run(r.id, load_child_runs=True) for r in rag_roots]
    with (out / "langchain_rag_trees.json").open("w", encoding="utf-8") as fh:
        json.dump([t.dict() for t in trees], fh, indent=2, default=str)
    # only the fields a user selected (no token counts): the model's own usage_metadata is all there is
    select = ["name", "run_type", "start_time", "end_time", "inputs", "outputs", "extra", "trace_id"]
    _dump_lines(
        out / "langchain_chat_select.jsonl",
        list(
            client.list_runs(project_name="langchain-chat", select=[*select, "parent_run_id", "dotted_order"])
        ),
    )
    write_bulk_export(out / "bulk_export_langgraph.parquet", store, "langgraph-agent")
    print("langsmith", langsmith.__version__, "->", out)


def write_bulk_export(path: Path, store: Store, project: str) -> None:
    """The project's runs as the bulk export writes them (Parquet, the documented exportable fields)."""
    from datetime import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    project_id = store.projects[project]
    runs = sorted((r for r in store.runs() if r["session_id"] == project_id), key=lambda r: r["dotted_order"])

    def ts(value: Any) -> datetime | None:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")) if value else None

    def text(value: Any) -> str | None:
        return None if value is None else json.dumps(value)

    columns: dict[str, tuple[pa.DataType, Callable[[dict[str, Any]], Any]]] = {
        "id": (pa.string(), lambda r: r["id"]),
        "tenant_id": (pa.string(), lambda r: TENANT_ID),
        "session_id": (pa.string(), lambda r: r["session_id"]),
        "trace_id": (pa.string(), lambda r: r["trace_id"]),
        "parent_run_id": (pa.string(), lambda r: r["parent_run_id"]),
        "parent_run_ids": (pa.string(), lambda r: text(r["parent_run_ids"])),
        "reference_example_id": (pa.string(), lambda r: r["reference_example_id"]),
        "name": (pa.string(), lambda r: r["name"]),
        "run_type": (pa.string(), lambda r: r["run_type"]),
        "start_time": (pa.timestamp("us", tz="UTC"), lambda r: ts(r["start_time"])),
        "end_time": (pa.timestamp("us", tz="UTC"), lambda r: ts(r["end_time"])),
        "status": (pa.string(), lambda r: r["status"]),
        "is_root": (pa.bool_(), lambda r: r["parent_run_id"] is None),
        "dotted_order": (pa.string(), lambda r: r["dotted_order"]),
        "trace_tier": (pa.string(), lambda r: "shortlived"),
        "inputs": (pa.string(), lambda r: text(r["inputs"])),
        "outputs": (pa.string(), lambda r: text(r["outputs"])),
        "error": (pa.string(), lambda r: r["error"]),
        "extra": (pa.string(), lambda r: text(r["extra"])),
        "events": (pa.string(), lambda r: text(r["events"])),
        "tags": (pa.string(), lambda r: text(r["tags"])),
        "feedback_stats": (pa.string(), lambda r: text(r["feedback_stats"])),
        "total_tokens": (pa.int64(), lambda r: r["total_tokens"]),
        "prompt_tokens": (pa.int64(), lambda r: r["prompt_tokens"]),
        "completion_tokens": (pa.int64(), lambda r: r["completion_tokens"]),
        "total_cost": (pa.float64(), lambda r: r["total_cost"]),
        "prompt_cost": (pa.float64(), lambda r: r["prompt_cost"]),
        "completion_cost": (pa.float64(), lambda r: r["completion_cost"]),
        "first_token_time": (pa.timestamp("us", tz="UTC"), lambda r: ts(r["first_token_time"])),
    }
    table = pa.table(
        {name: pa.array([get(r) for r in runs], type=kind) for name, (kind, get) in columns.items()}
    )
    pq.write_table(table, path, compression="zstd")


def main() -> None:
    """Produce every fixture into the folder named on the command line."""
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/real/langsmith")
    out.mkdir(parents=True, exist_ok=True)
    store = Store()
    openai_url = serve(OpenAIHandler)
    os.environ.update(
        {
            "LANGSMITH_ENDPOINT": serve(make_langsmith_handler(store)),
            "LANGSMITH_API_KEY": "lsv2_mock",
            "LANGSMITH_TRACING": "true",
            "OPENAI_API_KEY": "sk-mock",
        }
    )
    produce(out, store, openai_url)


if __name__ == "__main__":
    main()
