"""The shadow proxy's counters in the Prometheus text format (version 0.0.4), served at ``/_shadow/metrics``.

Each replica serves its own counters; Prometheus sums them. Counters only grow while a process lives; gauges
(in flight, pending rows, rates) are the value now.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

PREFIX = "ragreplay_shadow_"
CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"

# (section of the stats, key, metric name, type, help)
METRICS: tuple[tuple[str, str, str, str, str], ...] = (
    ("proxy", "requests", "requests_total", "counter", "Requests received by the proxy."),
    ("proxy", "forwarded", "forwarded_total", "counter", "Requests answered by the champion and passed on."),
    (
        "proxy",
        "not_shadowed_too_large",
        "not_shadowed_too_large_total",
        "counter",
        "Requests whose body was over the shadow cap: streamed to the champion, not shadowed.",
    ),
    (
        "proxy",
        "champion_unreachable",
        "champion_unreachable_total",
        "counter",
        "Requests the champion did not answer (502/504 sent).",
    ),
    (
        "proxy",
        "champion_broke_midstream",
        "champion_broke_midstream_total",
        "counter",
        "Champion replies cut off after the headers.",
    ),
    (
        "proxy",
        "mirror_errors",
        "mirror_errors_total",
        "counter",
        "Exchanges the mirror failed to take (the user was answered).",
    ),
    (
        "proxy",
        "tee_truncated",
        "tee_truncated_total",
        "counter",
        "Champion replies too long to copy for the shadow.",
    ),
    ("mirror", "recorded", "mirrored_total", "counter", "Sampled exchanges handed to the shadow."),
    (
        "mirror",
        "unparsed",
        "unparsed_total",
        "counter",
        "Sampled exchanges whose question or answer could not be read.",
    ),
    (
        "mirror",
        "champion_failed",
        "champion_failed_total",
        "counter",
        "Champion replies with a status of 400 or more (not shadowed).",
    ),
    ("mirror", "other_paths", "other_paths_total", "counter", "Requests on paths that are not mirrored."),
    (
        "mirror",
        "not_sampled",
        "not_sampled_total",
        "counter",
        "Requests the sampler left out (bodies not read).",
    ),
    (
        "mirror",
        "feedback_recorded",
        "feedback_tapped_total",
        "counter",
        "Labels read from the app's feedback endpoint.",
    ),
    (
        "mirror",
        "feedback_unreadable",
        "feedback_unreadable_total",
        "counter",
        "Feedback requests whose label could not be read.",
    ),
    (
        "mirror",
        "deferred",
        "read_off_loop_total",
        "counter",
        "Large sampled exchanges read in the offload worker, off the event loop.",
    ),
    (
        "mirror",
        "too_busy",
        "too_busy_total",
        "counter",
        "Large exchanges left out: the offload worker was reading its maximum already.",
    ),
    ("mirror", "pending", "reading_off_loop", "gauge", "Large exchanges being read off the event loop now."),
    ("shadow", "sampled", "sampled_total", "counter", "Requests chosen for the challengers."),
    (
        "shadow",
        "dropped",
        "dropped_total",
        "counter",
        "Sampled requests dropped: too many challengers in flight.",
    ),
    ("shadow", "in_flight", "challengers_in_flight", "gauge", "Challenger calls running now."),
    ("shadow", "challenger_errors", "challenger_errors_total", "counter", "Challenger calls that failed."),
    (
        "shadow",
        "challenger_timeouts",
        "challenger_timeouts_total",
        "counter",
        "Challenger calls that timed out.",
    ),
    ("shadow", "rows_written", "rows_written_total", "counter", "Shadow rows written to the store."),
    (
        "shadow",
        "rows_dropped",
        "rows_dropped_total",
        "counter",
        "Shadow rows dropped: the log's queue was full.",
    ),
    (
        "shadow",
        "rows_lost",
        "rows_lost_total",
        "counter",
        "Shadow rows lost: the store failed or refused them.",
    ),
    (
        "shadow",
        "rows_made_storable",
        "rows_made_storable_total",
        "counter",
        "Shadow rows written with a NUL or lone surrogate replaced.",
    ),
    ("shadow", "rows_pending", "rows_pending", "gauge", "Shadow rows queued or being written now."),
    (
        "shadow",
        "feedback_written",
        "feedback_written_total",
        "counter",
        "Feedback labels written to the store.",
    ),
    ("shadow", "feedback_lost", "feedback_lost_total", "counter", "Feedback labels lost or dropped."),
    ("sampler", "rate_now", "sampling_rate", "gauge", "The sampling rate in force now."),
    ("sampler", "effective_rate", "effective_sampling_rate", "gauge", "Share of requests sampled so far."),
)


def _number(value: Any) -> str:
    return repr(float(value)) if isinstance(value, float) else str(int(value))


def _lines(stats: Mapping[str, Any]) -> Iterator[str]:
    sections = {"proxy": stats, **{k: v for k, v in stats.items() if isinstance(v, Mapping)}}
    for section, key, name, kind, help_text in METRICS:
        values = sections.get(section)
        if not isinstance(values, Mapping) or values.get(key) is None:
            continue
        value = values[key]
        if key == "feedback_lost":
            value += values.get("feedback_dropped", 0)
        yield f"# HELP {PREFIX}{name} {help_text}"
        yield f"# TYPE {PREFIX}{name} {kind}"
        yield f"{PREFIX}{name} {_number(value)}"
    by_status = stats.get("by_status")
    if isinstance(by_status, Mapping) and by_status:
        name = f"{PREFIX}champion_responses_total"
        yield f"# HELP {name} Responses passed on to users, by HTTP status."
        yield f"# TYPE {name} counter"
        for status, count in sorted(by_status.items()):
            yield f'{name}{{status="{status}"}} {int(count)}'


def prometheus_text(stats: Mapping[str, Any]) -> str:
    """The stats of ``/_shadow/stats`` (proxy counters at the top, ``mirror``/``shadow``/``sampler`` sections)
    as Prometheus text."""
    return "\n".join(_lines(stats)) + "\n"
