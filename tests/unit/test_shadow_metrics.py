"""The Prometheus text of the shadow's counters, read back with prometheus_client's own parser."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from ragreplay.shadow.metrics import METRICS, PREFIX, prometheus_text

STATS = {
    "requests": 12,
    "forwarded": 11,
    "champion_unreachable": 1,
    "champion_broke_midstream": 0,
    "mirrored": 11,
    "mirror_errors": 0,
    "mirror_ms_max": 0.4,
    "tee_truncated": 0,
    "by_status": {"200": 10, "502": 1, "404": 1},
    "mirror": {"recorded": 9, "unparsed": 1, "champion_failed": 1, "other_paths": 0},
    "shadow": {
        "sampled": 9,
        "dropped": 0,
        "in_flight": 2,
        "rows_written": 15,
        "rows_pending": 3,
        "rows_lost": 0,
        "feedback_written": 4,
        "feedback_lost": 1,
        "feedback_dropped": 2,
    },
    "sampler": {"rate_now": 0.05, "effective_rate": 0.75, "seen": 12},
}


def parsed(text: str) -> dict[str, tuple[str, dict[tuple[tuple[str, str], ...], float]]]:
    out = {}
    for family in text_string_to_metric_families(text):
        out[family.name] = (family.type, {tuple(sorted(s.labels.items())): s.value for s in family.samples})
    return out


def test_counters_gauges_and_statuses_parse_back_with_their_values() -> None:
    families = parsed(prometheus_text(STATS))
    # prometheus_client names counter families without the _total suffix
    assert families[f"{PREFIX}requests"] == ("counter", {(): 12.0})
    assert families[f"{PREFIX}mirrored"] == ("counter", {(): 9.0})
    assert families[f"{PREFIX}challengers_in_flight"] == ("gauge", {(): 2.0})
    assert families[f"{PREFIX}rows_pending"] == ("gauge", {(): 3.0})
    assert families[f"{PREFIX}feedback_lost"] == ("counter", {(): 3.0})  # lost + dropped
    assert families[f"{PREFIX}sampling_rate"] == ("gauge", {(): 0.05})
    assert families[f"{PREFIX}effective_sampling_rate"] == ("gauge", {(): 0.75})
    assert families[f"{PREFIX}champion_responses"][1] == {
        (("status", "200"),): 10.0,
        (("status", "404"),): 1.0,
        (("status", "502"),): 1.0,
    }


def test_missing_sections_are_left_out_not_invented() -> None:
    families = parsed(prometheus_text({"requests": 3, "forwarded": 3}))
    assert set(families) == {f"{PREFIX}requests", f"{PREFIX}forwarded"}
    assert len({name for _, _, name, _, _ in METRICS}) == len(METRICS)  # no metric defined twice
