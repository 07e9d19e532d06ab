"""The dashboard's pictures on SQLite and PostgreSQL: the overview's charts draw its JSON twin's figures (days
with interval bands, per tag, latency and cost per side), and a row's page shows the word-level diff of the two
answers with user text escaped."""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path
from xml.etree import ElementTree as ET

from ragreplay.core.stats import wilson_interval

sys.path.insert(0, str(Path(__file__).parent))
from test_dashboard import SAME, SCRIPT, client, seeded, twin  # noqa: F401  (fixtures)

with warnings.catch_warnings():  # as test_dashboard: this starlette deprecates httpx for its test client
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

NS = "{http://www.w3.org/2000/svg}"


def svgs(page: str) -> dict[str, ET.Element]:
    """The page's charts, parsed, by their figure's id or challenger."""
    found = re.findall(r'<figure class="chart" (?:id|data-challenger)="([^"]+)">(<svg.*?</svg>)', page, re.S)
    return {key: ET.fromstring(svg) for key, svg in found}


def test_overview_charts_draw_the_twins_figures(client: TestClient) -> None:  # noqa: F811
    page = client.get("/").text
    data = twin(client, "/index.json")
    drawn = svgs(page)
    names = [h["challenger"] for h in data["headline"]]
    assert set(drawn) == {"chart-tags", "chart-latency", "chart-cost", *names}
    for svg in drawn.values():
        assert svg.get("role") == "img" and svg.get("aria-label")
        assert "empty" not in (svg.get("class") or "")
    for name in names:
        days = {d["day"][5:]: d for d in data["by_day"] if d["challenger"] == name}
        series = {s.get("data-series"): s for s in drawn[name].iter(f"{NS}g") if s.get("data-series")}
        agreement = series["agreement"].findall(f"{NS}circle")
        assert len(agreement) == sum(d["agreement_n"] > 0 for d in days.values())
        for point in agreement:
            day = days[point.get("data-x") or ""]
            assert float(point.get("data-value") or -1) == day["agreement"]
            low, high = wilson_interval(day["agreement_k"], day["agreement_n"])
            assert f"[{100 * low:.0f}%–{100 * high:.0f}%]" in "".join(point.itertext())
        assert series["agreement"].findall(f"{NS}polygon")  # the interval band
        for point in series[f"{name} preferred"].findall(f"{NS}circle"):
            assert float(point.get("data-value") or -1) == days[point.get("data-x") or ""]["win_share"]
    boxes = {b.get("data-group"): b for b in drawn["chart-latency"].iter(f"{NS}g") if b.get("data-group")}
    for c in data["summary"]["challengers"]:
        assert float(boxes[c["name"]].get("data-median") or -1) == c["latency"]["challenger_p50"]
        assert (
            float(boxes[f"champion (vs {c['name']})"].get("data-median") or -1)
            == c["latency"]["champion_p50"]
        )
    panels = {p.get("data-panel") for p in drawn["chart-tags"].iter(f"{NS}g") if p.get("data-panel")}
    assert panels == {r[1] for r in data["by_tag"]["rows"]}
    assert "charts" not in data  # the twin holds figures, not pictures


def test_a_rows_page_shows_the_word_diff_escaped(client: TestClient) -> None:  # noqa: F811
    page = client.get("/rows/script").text
    diff = re.search(r'<div class="diff" id="word-diff">(.*?)</div>', page, re.S)
    assert diff is not None
    inserted = "".join(re.findall(r"<ins>(.*?)</ins>", diff.group(1), re.S))
    assert "&lt;script&gt;" in inserted and "<script" not in page  # the challenger's markup, as text
    assert "<del>" not in diff.group(1)  # the champion's answer is all still there
    assert SAME in diff.group(1)
    data = twin(client, "/rows/script.json")
    assert "".join(s["text"] for s in data["diff"] if s["kind"] != "deleted") == f"{SCRIPT} {SAME}"
    assert "".join(s["text"] for s in data["diff"] if s["kind"] != "inserted") == SAME
