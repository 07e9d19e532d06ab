"""Produce the OpenTelemetry GenAI fixtures of tests/fixtures/real/otel/ with the instrumentations' own code.

An HR assistant (a RAG app) answers three questions with the OpenAI SDK, instrumented by an OpenTelemetry
GenAI instrumentation, against a mock OpenAI endpoint on 127.0.0.1. Spans and log records go out through the
OpenTelemetry SDK's OTLP/HTTP exporters (protobuf) to a loopback receiver that keeps each request body. The
user's thumbs (and an LLM judge's score, which is not user feedback) are emitted later with the SDK's own
Logs API as ``gen_ai.evaluation.result`` log records, as the GenAI evaluation-event convention defines them,
parented to the request's span. Each request body is then written as one JSON line:

- ``--ids hex`` (default): as the OpenTelemetry Collector's file exporter writes OTLP/JSON: protobuf's
  ``json_format`` with enums as integers, then ``traceId`` / ``spanId`` / ``parentSpanId`` turned from the
  protobuf JSON mapping's base64 into hex (the only conversion; the collector writes hex ids).
- ``--ids base64``: the plain protobuf JSON mapping of the request (base64 ids, enum names), as tools that
  serialize OTLP with ``json_format`` / ``MessageToJson`` write it.

Scenarios (the instrumentation's environment, set before it loads):

- ``openai_v2_events``: opentelemetry-instrumentation-openai-v2 2.3b0 on the 1.30 conventions with
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``: messages as ``gen_ai.*.message`` /
  ``gen_ai.choice`` log records; the app puts ``session.id`` and ``user.id`` on its own request span.
- ``openai_v2_span``: the same with ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` and
  ``span_only`` content: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` / ``gen_ai.system_instructions``
  span attributes, a retrieval span (opentelemetry-util-genai's ``TelemetryHandler.retrieval``); the app puts
  ``gen_ai.conversation.id`` and ``user.id`` on its request span.
- ``openai_v2_event_only``: latest conventions with ``event_only`` content and
  ``OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT=true``: the messages as structured attributes of
  ``gen_ai.client.inference.operation.details`` log records.
- ``openllmetry``: Traceloop's OpenLLMetry ``opentelemetry-instrumentation-openai`` (0.47.5 writes
  ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``, 0.62.4 ``gen_ai.input.messages``); the user's rating is
  a 1-5 ``user_rating`` score value.

Needs (its own venv, not ragreplay's): openai 3.63.0, opentelemetry-sdk 1.45.2,
opentelemetry-exporter-otlp-proto-http 1.45.2, httpx; for ``openai_v2_events``
opentelemetry-instrumentation-openai-v2 2.3b0 (2.4b0 always takes the latest conventions); for
``openai_v2_span`` / ``openai_v2_event_only`` opentelemetry-instrumentation-openai-v2 2.4b0 with
opentelemetry-util-genai 1.1b0 (2.4b0 does not load with util-genai 1.2b0 or later); for ``openllmetry``
opentelemetry-instrumentation-openai 0.47.5 or 0.62.4. Not run in CI. Usage::

    python scripts/real_fixtures/otel_genai_openai.py openai_v2_span tests/fixtures/real/otel/x.jsonl --ids hex
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

SYSTEM = "You are the HR assistant of Acme. Answer from the handbook excerpts only.\n\nHandbook excerpts:\n"
#: question -> (answer, prompt tokens, completion tokens, handbook chunk ids)
ANSWERS: dict[str, tuple[str, int, int, list[str]]] = {
    "How many vacation days do I get per year?": (
        "Full-time employees get 25 vacation days a year.",
        112,
        12,
        ["handbook/leave.md#2", "handbook/leave.md#3"],
    ),
    "Can I carry unused days over to next year?": (
        "Yes, up to 5 unused days carry over; the rest expire on 31 March.",
        151,
        18,
        ["handbook/leave.md#7"],
    ),
    "Who approves my expense reports?": (
        "Your line manager approves expense reports in the finance tool.",
        98,
        13,
        ["handbook/expenses.md#1"],
    ),
}
CHUNKS = {
    "handbook/leave.md#2": "Full-time employees receive 25 days of paid vacation per calendar year.",
    "handbook/leave.md#3": "Vacation is requested in the HR portal at least two weeks ahead.",
    "handbook/leave.md#7": "Up to 5 unused vacation days carry over; carried days expire on 31 March.",
    "handbook/expenses.md#1": "Expense reports are approved by your line manager in the finance tool.",
}
EVALUATION = "gen_ai.evaluation.result"
SCENARIOS = ("openai_v2_events", "openai_v2_span", "openai_v2_event_only", "openllmetry")


class MockOpenAI(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions``: the canned answer to the last user message, as OpenAI returns it."""

    calls = 0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        question = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        answer, prompt, completion, _ = ANSWERS[question]
        MockOpenAI.calls += 1
        time.sleep(0.05)
        reply = {
            "id": f"chatcmpl-mock{MockOpenAI.calls:03d}",
            "object": "chat.completion",
            "created": int(time.time()),
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
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
            "system_fingerprint": "fp_mock",
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


class OtlpReceiver(BaseHTTPRequestHandler):
    """``POST /v1/traces`` and ``/v1/logs``: keeps each OTLP/HTTP request body (protobuf), in arrival order."""

    bodies: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        OtlpReceiver.bodies.append((self.path, self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


def _serve(handler: type[BaseHTTPRequestHandler]) -> int:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return int(server.server_address[1])


def _environment(scenario: str) -> None:
    os.environ["OPENAI_API_KEY"] = "sk-mock"
    if scenario == "openai_v2_events":
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    elif scenario == "openai_v2_span":
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "span_only"
    elif scenario == "openai_v2_event_only":
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "event_only"
        os.environ["OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT"] = "true"
    else:
        os.environ["TRACELOOP_TRACE_CONTENT"] = "true"


class App:
    """The HR assistant: an OpenTelemetry-instrumented OpenAI client and the SDK's providers."""

    def __init__(self, scenario: str, receiver: int, openai_port: int) -> None:
        from openai import OpenAI
        from opentelemetry import _logs, trace
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.scenario = scenario
        resource = Resource.create({"service.name": "hr-assistant", "deployment.environment.name": "staging"})
        self.tracer_provider = TracerProvider(resource=resource)
        endpoint = f"http://127.0.0.1:{receiver}/v1"
        self.tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(f"{endpoint}/traces")))
        self.logger_provider = LoggerProvider(resource=resource)
        self.logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(OTLPLogExporter(f"{endpoint}/logs"))
        )
        trace.set_tracer_provider(self.tracer_provider)
        _logs.set_logger_provider(self.logger_provider)
        if scenario.startswith("openai_v2"):
            from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

            OpenAIInstrumentor().instrument()
        else:
            from opentelemetry.instrumentation.openai import OpenAIInstrumentor as Traceloop

            Traceloop().instrument()
        self.tracer = trace.get_tracer("hr_assistant.app")
        self.feedback_logger = _logs.get_logger("hr_assistant.feedback")
        self.client = OpenAI(base_url=f"http://127.0.0.1:{openai_port}/v1")

    def flush(self) -> None:
        """Send what is buffered (a collector batch)."""
        self.tracer_provider.force_flush()
        self.logger_provider.force_flush()

    def shutdown(self) -> None:
        """Flush and stop the providers."""
        self.flush()
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()

    def ask(self, question: str, history: list[dict[str, str]], conversation: str | None) -> Any:
        """One request: retrieve, ask the model, return the request span's context."""
        from opentelemetry.trace import SpanKind

        with self.tracer.start_as_current_span("POST /chat", kind=SpanKind.SERVER) as span:
            span.set_attribute("http.request.method", "POST")
            span.set_attribute("user.id", "u-4821")
            if conversation is not None:
                latest = self.scenario in ("openai_v2_span", "openai_v2_event_only")
                span.set_attribute("gen_ai.conversation.id" if latest else "session.id", conversation)
            chunk_ids = self._retrieve(question)
            system = SYSTEM + "\n".join(CHUNKS[c] for c in chunk_ids)
            messages = [
                {"role": "system", "content": system},
                *history,
                {"role": "user", "content": question},
            ]
            self.client.chat.completions.create(model="gpt-4o-mini", messages=messages, temperature=0)
            return span.get_span_context()

    def _retrieve(self, question: str) -> list[str]:
        chunk_ids = ANSWERS[question][3]
        if self.scenario != "openai_v2_span":
            return chunk_ids
        from opentelemetry.util.genai.handler import get_telemetry_handler

        with get_telemetry_handler().retrieval(data_source_id="hr-handbook", provider="chroma") as retrieval:
            retrieval.query_text = question
            retrieval.top_k = 2
            retrieval.documents = [
                {"id": c, "score": round(0.9 - i * 0.1, 2)} for i, c in enumerate(chunk_ids)
            ]
        return chunk_ids

    def evaluation(self, span_context: Any, name: str, value: float | None, label: str | None) -> None:
        """A ``gen_ai.evaluation.result`` log record on the request's span (Logs API)."""
        from opentelemetry.trace import NonRecordingSpan, set_span_in_context

        attributes: dict[str, Any] = {"gen_ai.evaluation.name": name}
        if value is not None:
            attributes["gen_ai.evaluation.score.value"] = value
        if label is not None:
            attributes["gen_ai.evaluation.score.label"] = label
        context = set_span_in_context(NonRecordingSpan(span_context))
        try:
            self.feedback_logger.emit(event_name=EVALUATION, context=context, attributes=attributes)
        except TypeError:  # SDK 1.36 (for OpenLLMetry 0.47.5): its Events API, the same log record
            from opentelemetry._events import Event
            from opentelemetry.sdk._events import EventLoggerProvider

            event = Event(
                EVALUATION,
                attributes=attributes,
                trace_id=span_context.trace_id,
                span_id=span_context.span_id,
                trace_flags=span_context.trace_flags,
            )
            EventLoggerProvider(self.logger_provider).get_event_logger("hr_assistant.feedback").emit(event)


def run(scenario: str) -> None:
    """Run the scenario's conversation: two questions in a conversation and a lone one, then the feedback."""
    app = App(scenario, _serve(OtlpReceiver), _serve(MockOpenAI))
    questions = list(ANSWERS)
    history: list[dict[str, str]] = []
    contexts = []
    for question in questions[:2]:
        contexts.append(app.ask(question, history, "conv-hr-7f3a"))
        history += [
            {"role": "user", "content": question},
            {"role": "assistant", "content": ANSWERS[question][0]},
        ]
    app.ask(questions[2], [], None)
    app.flush()
    time.sleep(0.2)  # the user reads, then clicks
    if scenario == "openllmetry":
        app.evaluation(contexts[0], "user_rating", 5, None)
        app.evaluation(contexts[1], "user_rating", 2, None)
    else:
        app.evaluation(contexts[0], "user_feedback", 1.0, "thumbs_up")
        app.evaluation(contexts[1], "user_feedback", 0.0, "thumbs_down")
    app.evaluation(contexts[1], "relevance", 0.92, "relevant")  # an LLM judge: not the user's feedback
    app.shutdown()


def _hex_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else _hex_ids(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def write(out: Path, ids: str) -> None:
    """Each kept request body as one OTLP/JSON line (see the module docstring)."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    lines = []
    for path, body in OtlpReceiver.bodies:
        request = ExportTraceServiceRequest() if path.endswith("/traces") else ExportLogsServiceRequest()
        request.ParseFromString(body)
        document = json_format.MessageToDict(request, use_integers_for_enums=ids == "hex")
        lines.append(json.dumps(_hex_ids(document) if ids == "hex" else document, separators=(",", ":")))
    out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def main() -> None:
    """Parse the arguments, run the scenario, write the file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=SCENARIOS)
    parser.add_argument("out", type=Path)
    parser.add_argument("--ids", choices=("hex", "base64"), default="hex")
    args = parser.parse_args()
    _environment(args.scenario)
    run(args.scenario)
    write(args.out, args.ids)


if __name__ == "__main__":
    main()
