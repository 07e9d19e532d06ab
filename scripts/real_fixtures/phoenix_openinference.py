"""Produce the Phoenix / OpenInference fixtures of tests/fixtures/real/phoenix/ with the tools' own code.

A support assistant answers questions through four frameworks, each instrumented by its OpenInference
instrumentation, against a mock OpenAI endpoint on 127.0.0.1 (the model's answers are canned, chosen by the
question). The spans go through the OpenTelemetry SDK's OTLP/HTTP exporter (protobuf) to a Phoenix server
started by this script on 127.0.0.1 (``phoenix serve``, SQLite in a temporary folder), one Phoenix project
per framework; end-user thumbs and an LLM judge's verdicts are then logged with the Phoenix client's own
annotation calls, and every file is written the way a user gets it from Phoenix:

- ``openai_sdk_session.otlp.jsonl``: OpenAI SDK chat completions (openinference-instrumentation-openai), two
  turns of one session, as OTLP JSON: a loopback receiver keeps each OTLP/HTTP export request and writes it
  as the OpenTelemetry Collector's file exporter does (one request per line): protobuf's ``json_format`` with
  enums as integers, then ``traceId`` / ``spanId`` / ``parentSpanId`` turned from base64 into hex (the only
  conversion; the collector writes hex ids).
- ``langchain_rag/spans.json``: a LangChain RAG chain (retriever, prompt, ChatOpenAI, parser; two turns of a
  session) as ``Client().spans.get_spans(project_identifier=...)`` returns it, saved with
  ``json.dump(spans, f, indent=2)``; ``langchain_rag/annotations.json``: its span annotations
  (``get_span_annotations``): a HUMAN ``user_feedback`` thumbs-up and thumbs-down and an LLM ``correctness``.
- ``llama_index_rag/spans.parquet`` and ``llama_index_rag.spans.csv``: a LlamaIndex query engine (the index
  built, then two queries of a session) as ``get_spans_dataframe()``, saved with ``to_parquet`` / ``to_csv``;
  ``llama_index_rag/span_annotations.csv``: ``get_span_annotations_dataframe(spans_dataframe=df)`` saved with
  ``to_csv`` (a ``user_feedback`` and an LLM ``relevance``); ``llama_index_rag/trace_annotations.json``: the
  REST page ``GET /v1/projects/{project}/trace_annotations`` as the server sends it (a ``user_feedback`` trace
  annotation, as the session view's thumbs write it).
- ``openai_agents.spans_page.json``: an OpenAI Agents SDK run (openinference-instrumentation-openai-agents,
  Responses API) as the REST page ``GET /v1/projects/{project}/spans`` sends it.

Needs (its own venv, not ragreplay's), the versions it was run with: arize-phoenix 20.26.1 (with
arize-phoenix-client 3.5.0, pandas 3.0.6, pyarrow 26.0.1), openai 3.63.0, opentelemetry-sdk 1.45.2,
opentelemetry-exporter-otlp-proto-http 1.45.2, openinference-instrumentation-openai 0.1.66,
langchain-core 1.8.3, langchain-openai 1.8.1, openinference-instrumentation-langchain 0.1.80,
llama-index-core 0.14.25, llama-index-llms-openai 0.8.3 (it asks for openai<3: install openai 3.63.0 after it
with ``--no-deps``, the Agents SDK needs openai 3), openinference-instrumentation-llama-index 4.6.1,
openai-agents 0.25.0, openinference-instrumentation-openai-agents 2.6.0, numpy 2.4.6. Not run in CI. Usage::

    python scripts/real_fixtures/phoenix_openinference.py tests/fixtures/real/phoenix
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

PHOENIX_PORT = 6106
PHOENIX = f"http://127.0.0.1:{PHOENIX_PORT}"

#: question -> the model's canned answer
ANSWERS: dict[str, str] = {
    "How do I reset my password?": "Open Settings > Security and choose Reset password.",
    "And if I no longer have access to my email?": (
        "Contact support with your account ID; they verify you by phone."
    ),
    "What is the refund window?": "You can ask for a refund within 30 days of purchase.",
    "Do refunds cover shipping costs?": (
        "No, shipping costs are not refunded unless the item arrived damaged."
    ),
    "Which plans include priority support?": (
        "Priority support is included in the Business and Enterprise plans."
    ),
    "How fast does priority support reply?": "Priority support replies within 4 business hours.",
    "Can I change my plan mid-cycle?": "Yes, plan changes apply at once and are prorated.",
}
POLICY = {
    "refund-policy#1": "Refunds are accepted within 30 days of purchase.",
    "refund-policy#2": "Shipping costs are refunded only when the item arrived damaged.",
}
PLANS = [
    "Priority support is part of the Business and Enterprise plans.",
    "Priority support answers within 4 business hours.",
]


def _answer(text: str) -> str:
    for question, answer in ANSWERS.items():
        if question in text:
            return answer
    return "I don't know."


def _words(text: str) -> int:
    return len(text.split())


class MockOpenAI(BaseHTTPRequestHandler):
    """Chat Completions and Responses endpoints with canned answers."""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        """Answer a chat completion or a response request."""
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/chat/completions"):
            self._send(_completion(body))
        elif self.path.endswith("/responses"):
            self._send(_response(body))
        else:
            self.send_error(404)

    def _send(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _completion(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    last = next((_text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    answer = _answer(last)
    prompt = sum(_words(_text_of(m.get("content"))) for m in messages)
    return {
        "id": "chatcmpl-mock-1",
        "object": "chat.completion",
        "created": 1767261600,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": _words(answer),
            "total_tokens": prompt + _words(answer),
        },
        "system_fingerprint": "fp_mock",
    }


def _response(body: dict[str, Any]) -> dict[str, Any]:
    items = body.get("input")
    text = items if isinstance(items, str) else json.dumps(items)
    answer = _answer(text)
    prompt = _words(text) + _words(str(body.get("instructions") or ""))
    return {
        "id": "resp_mock_1",
        "object": "response",
        "created_at": 1767261600,
        "status": "completed",
        "model": "gpt-4o-mini-2024-07-18",
        "output": [
            {
                "type": "message",
                "id": "msg_mock_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": answer, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": _words(answer),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + _words(answer),
        },
    }


class OtlpCapture(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver keeping each request as the collector's file exporter writes it."""

    requests: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        """Keep one export request."""
        from google.protobuf import json_format
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        request = ExportTraceServiceRequest()
        request.ParseFromString(self.rfile.read(int(self.headers["Content-Length"])))
        document = json_format.MessageToDict(request, use_integers_for_enums=True)
        OtlpCapture.requests.append(json.dumps(_hex_ids(document), separators=(",", ":")))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()


def _hex_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else _hex_ids(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def _serve(handler: type[BaseHTTPRequestHandler]) -> str:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


@contextmanager
def phoenix_server() -> Iterator[None]:
    """A Phoenix server on 127.0.0.1 with its database in a temporary folder."""
    import httpx

    with tempfile.TemporaryDirectory() as work:
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": work,
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(PHOENIX_PORT),
            "PHOENIX_GRPC_PORT": str(PHOENIX_PORT + 1),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        phoenix = Path(sys.executable).with_name("phoenix")
        with open(Path(work) / "server.log", "wb") as log:
            proc = subprocess.Popen([str(phoenix), "serve"], env=env, stdout=log, stderr=log)
            try:
                for _ in range(120):
                    try:
                        if httpx.get(f"{PHOENIX}/v1/projects").status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    time.sleep(1)
                yield
            finally:
                proc.terminate()
                proc.wait(30)


def tracer_provider(project: str, *extra: str) -> Any:
    """A tracer provider exporting to the Phoenix project ``project`` (and to the ``extra`` OTLP endpoints)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"openinference.project.name": project}))
    for endpoint in (f"{PHOENIX}/v1/traces", *extra):
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


def run_openai_sdk(mock: str, out: Path) -> None:
    """Two turns of a session with the OpenAI SDK; the spans as OTLP JSON lines."""
    import openai
    from openinference.instrumentation import using_session, using_user
    from openinference.instrumentation.openai import OpenAIInstrumentor

    capture = _serve(OtlpCapture)
    provider = tracer_provider("openai-sdk", f"{capture}/v1/traces")
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    client = openai.OpenAI(base_url=f"{mock}/v1", api_key="sk-mock")
    messages: list[dict[str, str]] = [
        {"role": "system", "content": "You are the support assistant of Acme Cloud."}
    ]
    with using_session("support-7"), using_user("u-ann"):
        for question in ("How do I reset my password?", "And if I no longer have access to my email?"):
            messages.append({"role": "user", "content": question})
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
            messages.append({"role": "assistant", "content": reply.choices[0].message.content or ""})
    OpenAIInstrumentor().uninstrument()
    provider.shutdown()
    (out / "openai_sdk_session.otlp.jsonl").write_text("".join(r + "\n" for r in OtlpCapture.requests))


def run_langchain(mock: str, out: Path) -> None:
    """A LangChain RAG chain, two turns of a session; spans and annotations as the Phoenix client gets them."""
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnablePassthrough
    from langchain_openai import ChatOpenAI
    from openinference.instrumentation import using_session, using_user
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from phoenix.client import Client

    class PolicyRetriever(BaseRetriever):  # type: ignore[misc]
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [
                Document(id=doc_id, page_content=text, metadata={"source": "refund-policy.md"})
                for doc_id, text in POLICY.items()
            ]

    def join(docs: list[Document]) -> str:
        return "\n".join(d.page_content for d in docs)

    provider = tracer_provider("langchain-rag")
    LangChainInstrumentor().instrument(tracer_provider=provider)
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the policy excerpts:\n{context}"), ("human", "{question}")]
    )
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=f"{mock}/v1", api_key="sk-mock")
    chain = (
        {"context": PolicyRetriever() | join, "question": RunnablePassthrough()}
        | prompt
        | llm
        | StrOutputParser()
    )
    with using_session("lc-session-42"), using_user("u-bob"):
        for question in ("What is the refund window?", "Do refunds cover shipping costs?"):
            chain.invoke(question)
    LangChainInstrumentor().uninstrument()
    provider.shutdown()
    client = Client(base_url=PHOENIX)
    spans = _wait_spans(client, "langchain-rag")
    roots = sorted((s for s in spans if s["parent_id"] is None), key=lambda s: s["start_time"])
    llm_spans = sorted((s for s in spans if s["span_kind"] == "LLM"), key=lambda s: s["start_time"])
    client.spans.add_span_annotation(
        span_id=roots[0]["context"]["span_id"],
        annotation_name="user_feedback",
        annotator_kind="HUMAN",
        label="thumbs-up",
        score=1,
        sync=True,
    )
    client.spans.add_span_annotation(
        span_id=llm_spans[1]["context"]["span_id"],
        annotation_name="user_feedback",
        annotator_kind="HUMAN",
        label="thumbs-down",
        score=0,
        explanation="It did not say who pays return shipping.",
        sync=True,
    )
    for root, verdict in zip(roots, ("correct", "incorrect"), strict=True):
        client.spans.add_span_annotation(
            span_id=root["context"]["span_id"],
            annotation_name="correctness",
            annotator_kind="LLM",
            label=verdict,
            score=1 if verdict == "correct" else 0,
            explanation=f"The judge found the answer {verdict}.",
            sync=True,
        )
    annotations = client.spans.get_span_annotations(spans=spans, project_identifier="langchain-rag")
    folder = out / "langchain_rag"
    folder.mkdir(exist_ok=True)
    with open(folder / "spans.json", "w") as f:
        json.dump(spans, f, indent=2)
    with open(folder / "annotations.json", "w") as f:
        json.dump(annotations, f, indent=2)


def _wait_spans(client: Any, project: str) -> list[dict[str, Any]]:
    import httpx

    for _ in range(30):
        try:
            spans: list[dict[str, Any]] = client.spans.get_spans(project_identifier=project, limit=1000)
        except httpx.HTTPStatusError:  # the project is made with its first span
            spans = []
        if spans:
            time.sleep(2)  # the last batch of the project
            return list(client.spans.get_spans(project_identifier=project, limit=1000))
        time.sleep(1)
    raise SystemExit(f"no spans arrived in Phoenix project {project}")


def run_llama_index(mock: str, out: Path) -> None:
    """A LlamaIndex query engine, two queries of a session; the spans dataframe and its annotations."""
    import httpx
    from llama_index.core import Document, Settings, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.llms.openai import OpenAI
    from openinference.instrumentation import using_session, using_user
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
    from phoenix.client import Client

    provider = tracer_provider("llama-index-rag")
    LlamaIndexInstrumentor().instrument(tracer_provider=provider)
    Settings.llm = OpenAI(model="gpt-4o-mini", api_base=f"{mock}/v1", api_key="sk-mock")
    Settings.embed_model = MockEmbedding(embed_dim=4)
    docs = [Document(text=text, doc_id=f"plans.md#{i}") for i, text in enumerate(PLANS, start=1)]
    engine = VectorStoreIndex.from_documents(docs).as_query_engine(similarity_top_k=2)
    with using_session("li-session-9"), using_user("u-cem"):
        for question in ("Which plans include priority support?", "How fast does priority support reply?"):
            engine.query(question)
    LlamaIndexInstrumentor().uninstrument()
    provider.shutdown()
    client = Client(base_url=PHOENIX)
    _wait_spans(client, "llama-index-rag")
    df = client.spans.get_spans_dataframe(project_identifier="llama-index-rag")
    queries = df[df["name"] == "RetrieverQueryEngine.query"]  # not the indexing traces
    roots = queries[queries["parent_id"].isna()].sort_values("start_time")
    first, second = roots.iloc[0], roots.iloc[1]
    client.spans.add_span_annotation(
        span_id=first["context.span_id"],
        annotation_name="user_feedback",
        annotator_kind="HUMAN",
        label="positive",
        score=1,
        sync=True,
    )
    client.spans.add_span_annotation(
        span_id=second["context.span_id"],
        annotation_name="relevance",
        annotator_kind="LLM",
        label="relevant",
        score=1,
        explanation="Both retrieved chunks are about priority support.",
        sync=True,
    )
    client.traces.add_trace_annotation(
        trace_id=second["context.trace_id"],
        annotation_name="user_feedback",
        annotator_kind="HUMAN",
        label="negative",
        score=0,
        sync=True,
    )
    folder = out / "llama_index_rag"
    folder.mkdir(exist_ok=True)
    df.to_parquet(folder / "spans.parquet")
    df.to_csv(out / "llama_index_rag.spans.csv")
    client.spans.get_span_annotations_dataframe(
        spans_dataframe=df, project_identifier="llama-index-rag"
    ).to_csv(folder / "span_annotations.csv")
    page = httpx.get(
        f"{PHOENIX}/v1/projects/llama-index-rag/trace_annotations",
        params={"trace_ids": list(roots["context.trace_id"])},
    )
    page.raise_for_status()
    (folder / "trace_annotations.json").write_bytes(page.content)


def run_openai_agents(mock: str, out: Path) -> None:
    """An OpenAI Agents SDK run; the spans as the REST API's page of spans."""
    import agents
    import httpx
    import openai
    from openinference.instrumentation import using_session, using_user
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    from phoenix.client import Client

    agents.set_trace_processors([])  # no export to OpenAI's tracing backend
    agents.set_default_openai_client(openai.AsyncOpenAI(base_url=f"{mock}/v1", api_key="sk-mock"))
    provider = tracer_provider("openai-agents")
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    agent = agents.Agent(
        name="Billing agent",
        instructions="You answer billing questions of Acme Cloud customers.",
        model="gpt-4o-mini",
    )
    with using_session("agents-session-3"), using_user("u-dee"):
        agents.Runner.run_sync(agent, "Can I change my plan mid-cycle?")
    OpenAIAgentsInstrumentor().uninstrument()
    provider.shutdown()
    _wait_spans(Client(base_url=PHOENIX), "openai-agents")
    page = httpx.get(f"{PHOENIX}/v1/projects/openai-agents/spans", params={"limit": 100})
    page.raise_for_status()
    (out / "openai_agents.spans_page.json").write_bytes(page.content)


def main() -> None:
    """Write the fixtures into the folder given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    mock = _serve(MockOpenAI)
    with phoenix_server():
        run_openai_sdk(mock, out)
        run_langchain(mock, out)
        run_llama_index(mock, out)
        run_openai_agents(mock, out)


if __name__ == "__main__":
    main()
