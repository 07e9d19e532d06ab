"""The shadow dashboard on SQLite and PostgreSQL, in process (Starlette's TestClient) and over HTTP: its numbers
are the report's, every page's JSON twin holds the page's data, filters and keyset pages list each judged row
once, user text is escaped, and bad parameters get a 400 with the fix."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import warnings
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from builders import make_shadow_row
from ragreplay.asgi.serving import serve_in_thread
from ragreplay.cli.app import main
from ragreplay.compare.grid import ComparisonSummary
from ragreplay.core.compare_stats import CompareRow
from ragreplay.core.shadow import ShadowAnswer, ShadowFeedback, ShadowRow
from ragreplay.core.types import Feedback, Fit
from ragreplay.report.compare_labels import grid_rows, tag_rows
from ragreplay.shadow.judging import parse_since, stored_shadow_summary
from ragreplay.store import Store
from ragreplay.web import create_app
from ragreplay.web.queries import ANSWER_PREVIEW

with warnings.catch_warnings():  # this starlette deprecates httpx for its test client; httpx serves it fine
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

NOW = datetime.now(UTC)
QUESTION = "how many leave days do employees get"
SCRIPT = '<script>alert("owned")</script>'
SAME = "employees get 25 leave days"
LONG = "employees get many leave days every year " + "and the policy explains it in detail " * 12
CHUNK = f"{SCRIPT} Leave policy: employees get 25 days"
LONG_CHUNK = "Article 4. Leave accrues monthly " + "and is explained in the handbook " * 20 + "END-OF-CHUNK"
# (champion answer, challenger answer): with the fake judge these give FIT/tie, NO_FIT/challenger,
# NO_FIT/champion and UNSCORABLE (see test_shadow_judge.py).
PAIRS = [
    (SAME, SAME),
    ("no idea sorry", "employees get many leave days every year"),
    ("employees get 30 leave days per year", "please call someone"),
    (SAME, "[[unparseable]] employees"),
]


def make_row(
    rid: str,
    hours: float,
    challenger: str,
    champion: str,
    candidate: str,
    query: str = QUESTION,
    tags: dict[str, str] | None = None,
    error: str | None = None,
    chunk_texts: tuple[list[str | None], list[str | None]] = ([], []),
) -> ShadowRow:
    return make_shadow_row(
        id=rid,
        ts=NOW - timedelta(hours=hours),
        request_id=f"req-{rid}",
        query=query,
        tags=tags or {},
        challenger=challenger,
        champion_answer=ShadowAnswer(
            text=champion,
            chunk_ids=[f"doc{rid}#1"],
            chunk_texts=chunk_texts[0],
            latency_ms=100.0,
            cost_usd=0.001,
        ),
        challenger_answer=ShadowAnswer(
            text=candidate,
            chunk_ids=[f"doc{rid}#2"],
            chunk_texts=chunk_texts[1],
            latency_ms=160.0,
            cost_usd=0.003,
            error=error,
        ),
    )


def seed_rows() -> list[ShadowRow]:
    rows = []
    for i in range(26):  # one every 6 hours over 6.5 days: several per UTC day, both challengers
        champion, candidate = PAIRS[i % 4]
        tags = {"dept": "hr" if i % 2 else "it"}
        rows.append(make_row(f"r{i:02d}", 6 * i + 0.5, "b" if i % 3 else "c", champion, candidate, tags=tags))
    rows.append(
        make_row(
            "script",
            2,
            "b",
            SAME,
            f"{SCRIPT} {SAME}",
            query=f"{SCRIPT} {QUESTION}",
            tags={"dept": SCRIPT},
            chunk_texts=([CHUNK], [CHUNK]),
        )
    )
    rows.append(
        make_row("long", 3, "b", "no idea sorry", LONG, tags={"dept": "hr"}, chunk_texts=([], [LONG_CHUNK]))
    )
    rows.append(make_row("failed", 4, "b", SAME, "", error="TimeoutError: 30 s"))
    rows.append(make_row("old", 24 * 10, "b", SAME, "nothing at all"))  # outside the 7-day window
    return rows


@pytest.fixture
def seeded(store: Store, store_url: str) -> Store:
    store.shadow_rows.write_shadow_rows(seed_rows())
    assert main(["shadow", "judge", "--db", store_url, "--judge", "fake:default", "--since", "30d"]) == 0
    labels = {"r01": Feedback.BAD, "r02": Feedback.GOOD, "r04": Feedback.GOOD, "r06": Feedback.GOOD}
    labels["script"] = Feedback.BAD
    store.shadow_feedback.write_shadow_feedback(
        [
            ShadowFeedback(
                request_id=f"req-{rid}", feedback=label, ts=NOW, comment=f"{SCRIPT} comment on {rid}"
            )
            for rid, label in labels.items()
        ]
    )
    # written after judging: a row that is not judged yet
    store.shadow_rows.write_shadow_rows([make_row("fresh", 0.1, "b", SAME, SAME)])
    return store


@pytest.fixture
def client(seeded: Store, store_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(store_url)) as test_client:
        yield test_client


class Page(HTMLParser):
    """The parts of a dashboard page the tests look at: every element's attributes, tables' cell texts."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None
        self.text_parts: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        self.elements.append((tag, found))
        if tag == "table":
            self._table = found.get("id", "")
            self.tables.setdefault(self._table, [])
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        self.text_parts.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def all(self, tag: str | None = None, **attrs: str) -> list[dict[str, str]]:
        """Elements with the tag and attribute values given (``class_`` for class, ``has_x`` for presence)."""
        out = []
        for name, found in self.elements:
            if tag is not None and name != tag:
                continue
            ok = True
            for key, want in attrs.items():
                if key == "class_":
                    ok = ok and want in found.get("class", "").split()
                elif key.startswith("has_"):
                    ok = ok and key[4:].replace("_", "-") in found
                else:
                    ok = ok and found.get(key.replace("_", "-")) == want
            if ok:
                out.append(found)
        return out

    @property
    def text(self) -> str:
        return "".join(self.text_parts)


def get_page(client: TestClient, url: str, status: int = 200) -> Page:
    response = client.get(url)
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"].startswith("text/html")
    return Page(response.text)


def twin(client: TestClient, url: str, status: int = 200) -> Any:
    response = client.get(url)
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def attr_number(value: str) -> float | None:
    return None if value == "" else float(value)


def report_summary(store: Store) -> ComparisonSummary:
    return stored_shadow_summary(store, parse_since("7d"))


def could_not_score(rows: list[CompareRow], name: str) -> int:
    return sum(
        r.challenger == name and r.error is None and (r.agreement == Fit.UNSCORABLE or r.preference is None)
        for r in rows
    )


def without_window_label(summary: dict[str, Any]) -> dict[str, Any]:
    # the label names the window's start to the minute, which may tick between two computations
    return {k: v for k, v in summary.items() if k != "cases"}


def without_figures_from_sketches(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary without its rows, window label and the figures that rollups take from sketches."""
    kept = {k: v for k, v in without_window_label(summary).items() if k != "rows"}
    kept["challengers"] = [
        {k: v for k, v in c.items() if k not in ("latency", "spreads")} for c in summary["challengers"]
    ]
    return kept


def test_overview_shows_the_reports_numbers_and_its_twin_the_same_data(
    seeded: Store, client: TestClient
) -> None:
    summary = report_summary(seeded)
    assert [s.name for s in summary.challengers] == ["b", "c"]
    html = get_page(client, "/")
    data = twin(client, "/index.json")

    cards = html.all("div", class_="card")
    assert [c["data-challenger"] for c in cards] == ["b", "c"]
    assert html.all(id="headline")
    for card, s, h in zip(cards, summary.challengers, data["headline"], strict=True):
        assert attr_number(card["data-agreement"]) == s.agreement.value
        assert attr_number(card["data-preference"]) == s.preference_disagreements.share
        assert int(card["data-unscorable"]) == could_not_score(summary.rows, s.name) == h["unscorable"]
        assert (h["agreement"], h["preference"]) == (s.agreement.value, s.preference_disagreements.share)
        assert (h["agreement_k"], h["agreement_n"]) == (s.agreement.k, s.agreement.n)
        assert (h["agreement_low"], h["agreement_high"]) == (s.agreement.low, s.agreement.high)
        assert h["preference_n"] == s.preference_disagreements.n_decided
        assert (h["preference_low"], h["preference_high"]) == (
            s.preference_disagreements.low,
            s.preference_disagreements.high,
        )
        assert h["errors"] == s.n_errors and h["judged"] == s.n_cases
    b = data["headline"][0]
    assert b["unscorable"] > 0 and b["errors"] == 1 and b["preference_n"] > 0

    grid = [[label, *cells] for label, cells in grid_rows(summary)]
    assert html.tables["grid"][1:] == grid
    assert data["grid"]["rows"] == [[label, cells] for label, cells in grid_rows(summary)]
    assert "users rated champion good / bad" in [row[0] for row in grid]  # the feedback rows are there
    assert [row for row in html.tables["by-tag"][1:]] == tag_rows(summary) == data["by_tag"]["rows"]
    assert {row[1] for row in tag_rows(summary)} >= {"dept=hr", "dept=it", f"dept={SCRIPT}"}
    assert len(html.tables["feedback"]) == 3 and [f["challenger"] for f in data["feedback"]] == ["b", "c"]
    assert data["warnings"] == summary.warnings and summary.warnings
    assert all(w in html.text for w in summary.warnings)

    # the twin's summary is the report's figures from the rollups: no rows (they are paged at /rows.json),
    # latency quantiles from sketches (within 1%, tests/integration/test_shadow_rollups.py), every count exact
    assert data["summary"]["rows"] == [] and data["links"]["rows_json"] == "/rows.json?since=7d"
    assert without_figures_from_sketches(data["summary"]) == without_figures_from_sketches(
        summary.model_dump(mode="json")
    )

    # the per-day table: the page's rows are the twin's, and they add up to the report's figures
    day_rows = html.all("tr", has_data_day="")
    assert len(day_rows) == len(data["by_day"]) >= 2 * 7
    for tr, d in zip(day_rows, data["by_day"], strict=True):
        assert (tr["data-day"], tr["data-challenger"]) == (d["day"], d["challenger"])
        assert int(tr["data-judged"]) == d["judged"] and int(tr["data-unscorable"]) == d["unscorable"]
        assert attr_number(tr["data-agreement"]) == d["agreement"]
        assert attr_number(tr["data-win-share"]) == d["win_share"]
    assert html.tables["by-day"][1:] and len(html.tables["by-day"]) == len(day_rows) + 1
    for s in summary.challengers:
        mine = [d for d in data["by_day"] if d["challenger"] == s.name]
        assert sum(d["judged"] for d in mine) == s.n_cases
        assert sum(d["errors"] for d in mine) == s.n_errors
        assert sum(d["agreement_k"] for d in mine) == s.agreement.k
        assert sum(d["agreement_n"] for d in mine) == s.agreement.n
        assert sum(d["wins"] for d in mine) == s.preference_disagreements.challenger_wins
        assert sum(d["losses"] for d in mine) == s.preference_disagreements.champion_wins
        assert sum(d["ties"] for d in mine) == s.preference_disagreements.ties
        assert sum(d["unscorable"] for d in mine) == could_not_score(summary.rows, s.name)
        assert sum(d["judged"] > 0 for d in mine) >= 5  # spread over the week: a trend to read
    assert html.all("polyline")  # the sparklines


def test_the_window_follows_since(seeded: Store, client: TestClient) -> None:
    wide = twin(client, "/index.json?since=30d")
    summary = stored_shadow_summary(seeded, parse_since("30d"))
    assert wide["judged"] == len(summary.rows) == len(report_summary(seeded).rows) + 1  # the old row
    assert wide["since"] == "30d"
    recent = twin(client, "/index.json?since=10m")
    assert recent["judged"] == 0 and recent["headline"] == []
    html = get_page(client, "/?since=10m")
    assert html.all(id="empty") and "ragreplay shadow judge --since 10m" in html.text
    assert html.all(id="grid") and html.all(id="by-tag") and html.all(id="by-day")
    iso = twin(client, f"/index.json?since={(NOW - timedelta(days=2)).date().isoformat()}")
    assert 0 < iso["judged"] < wide["judged"]


def walk(client: TestClient, first: str) -> tuple[list[str], int]:
    """Every row id of every page from ``first`` on, following the HTML's ``a.next`` and checking each page
    against its JSON twin; returns the ids and the number of pages."""
    ids: list[str] = []
    url: str | None = first
    pages = 0
    while url is not None:
        pages += 1
        html = get_page(client, url)
        split = urlsplit(url)
        data = twin(client, f"{split.path}.json?{split.query}")
        found = [tr["data-row-id"] for tr in html.all("tr", class_="row")]
        assert found == [r["id"] for r in data["rows"]]
        assert html.all(id="rows")
        nexts = html.all("a", class_="next")
        assert [a["href"] for a in nexts] == ([data["links"]["next"]] if data["links"]["next"] else [])
        ids += found
        url = nexts[0]["href"] if nexts else None
        assert pages < 100
    return ids, pages


def expected_ids(summary: ComparisonSummary, outcome: str | None = None, **match: str) -> list[str]:
    def keep(r: CompareRow) -> bool:
        ok = r.error is None
        rules = {
            None: True,
            "disagree": ok and r.agreement == Fit.NO_FIT,
            "challenger": ok and r.preference == "challenger",
            "champion": ok and r.preference == "champion",
            "tie": ok and r.preference == "tie",
            "unscorable": ok and (r.agreement == Fit.UNSCORABLE or r.preference is None),
            "error": not ok,
        }
        if "challenger" in match and r.challenger != match["challenger"]:
            return False
        if "dept" in match and r.tags.get("dept") != match["dept"]:
            return False
        return bool(rules[outcome])

    return [r.case_id for r in summary.rows if keep(r)]


def test_rows_filters_and_keyset_pages(seeded: Store, client: TestClient) -> None:
    summary = report_summary(seeded)
    by_id = {r.id: r for r in seed_rows()}
    newest_first = sorted(expected_ids(summary), key=lambda i: (by_id[i].ts, i), reverse=True)

    ids, pages = walk(client, "/rows?limit=4")
    assert ids == newest_first  # every judged row of the window once, newest first; the unjudged one never
    assert len(ids) == len(set(ids)) == len(summary.rows) and pages == -(-len(ids) // 4)
    assert "fresh" not in ids and "old" not in ids

    default = twin(client, "/rows.json")
    assert [r["id"] for r in default["rows"]] == newest_first[:50]
    assert default["next"] is None and default["links"]["next"] is None

    for outcome in ("disagree", "challenger", "champion", "tie", "unscorable", "error"):
        got, _ = walk(client, f"/rows?outcome={outcome}&limit=3")
        want = expected_ids(summary, outcome)
        assert want, outcome  # the seed has every outcome
        assert Counter(got) == Counter(want), outcome
    got, _ = walk(client, "/rows?challenger=c&tag=dept%3Dit&limit=2")
    assert Counter(got) == Counter(expected_ids(summary, challenger="c", dept="it")) and got
    got, _ = walk(client, "/rows?challenger=b&outcome=disagree&since=2d&limit=2")
    start = parse_since("2d")
    want = [i for i in expected_ids(summary, "disagree", challenger="b") if by_id[i].ts >= start]
    assert Counter(got) == Counter(want) and got
    assert walk(client, "/rows?challenger=nobody") == ([], 1)
    got, _ = walk(client, "/rows?" + urlencode({"tag": f"dept={SCRIPT}"}))
    assert got == ["script"]

    # the headline's links lead to the rows its numbers count
    overview = twin(client, "/index.json")
    for h in overview["headline"]:
        unscorable, _ = walk(client, h["links"]["unscorable"])
        assert len(unscorable) == h["unscorable"]
        errors, _ = walk(client, h["links"]["errors"])
        assert len(errors) == h["errors"]


def test_rows_show_verdicts_feedback_and_cut_answers(client: TestClient) -> None:
    data = twin(client, "/rows.json?limit=500")
    rows = {r["id"]: r for r in data["rows"]}
    long = rows["long"]
    assert len(long["challenger_answer"]) == ANSWER_PREVIEW and long["challenger_answer"].endswith("…")
    assert long["agreement"] == "NO_FIT" and long["preferred"] in ("challenger", "champion", "tie")
    assert rows["r01"]["feedback"]["label"] == "bad" and rows["r02"]["feedback"]["label"] == "good"
    assert rows["r03"]["feedback"] is None
    assert rows["failed"]["error"].startswith("b: TimeoutError") and rows["failed"]["agreement"] is None
    html = get_page(client, "/rows?limit=500")
    assert LONG not in html.text and long["challenger_answer"] in html.text


def test_one_row_whole_with_its_twin(client: TestClient) -> None:
    html = get_page(client, "/rows/long")
    data = twin(client, "/rows/long.json")
    assert html.all(id="row-detail", data_row_id="long")
    assert LONG in html.text and data["challenger_answer"]["text"] == LONG
    assert data["champion_answer"]["chunk_ids"] == ["doclong#1"] and "doclong#2" in html.text
    assert data["challenger_answer"]["latency_ms"] == 160.0 and "160 ms" in html.text
    assert data["challenger_answer"]["cost_usd"] == 0.003 and "$0.0030" in html.text
    judgment = data["judgment"]
    assert judgment["agreement"] == "NO_FIT" and judgment["agreement"] in html.text
    assert judgment["consistent"] is not None and judgment["reasons"]
    assert all(reason in html.text for reason in judgment["reasons"])
    assert len(judgment["orderings"]) == 2  # judged in both orders, each told in champion/challenger terms
    assert {o["shown_first"] for o in judgment["orderings"]} == {"champion", "challenger"}
    assert "fake:default" in judgment["judge"]

    assert data["challenger_answer"]["chunks"] == [{"id": "doclong#2", "text": LONG_CHUNK}]
    assert data["champion_answer"]["chunks"] == [{"id": "doclong#1", "text": None}]  # a row without texts
    long_chunk = html.all("details")
    assert len(long_chunk) == 1 and LONG_CHUNK in html.text  # folded, whole
    assert "text not kept" in html.text

    rated = twin(client, "/rows/r01.json")
    assert rated["feedback"]["label"] == "bad" and rated["feedback"]["comment"].endswith("comment on r01")
    assert "comment on r01" in get_page(client, "/rows/r01").text

    fresh = twin(client, "/rows/fresh.json")
    assert fresh["judgment"] is None and "Not judged yet" in get_page(client, "/rows/fresh").text
    failed = twin(client, "/rows/failed.json")
    assert failed["challenger_answer"]["error"] == "TimeoutError: 30 s" and failed["judgment"]["error"]

    missing = get_page(client, "/rows/nope", status=404)
    assert "There is no shadow row with id 'nope'" in missing.text
    assert twin(client, "/rows/nope.json", status=404)["error"].startswith("There is no shadow row")


def test_user_text_is_escaped_everywhere(client: TestClient) -> None:
    by_tag = "/rows?" + urlencode({"tag": f"dept={SCRIPT}"})
    for url in ("/", "/rows?limit=500", "/rows?outcome=disagree", "/rows/script", by_tag):
        response = client.get(url)
        assert response.status_code == 200
        assert "<script" not in response.text.lower(), url
    detail = client.get("/rows/script").text
    assert "&lt;script&gt;alert(" in detail
    assert SCRIPT in Page(detail).text  # shown as text, whole
    assert SCRIPT in Page(client.get("/").text).text  # the tag value in the per-tag table
    bad = client.get("/?" + urlencode({"since": SCRIPT}))
    assert bad.status_code == 400 and "<script" not in bad.text.lower()
    assert twin(client, "/rows/script.json")["question"] == f"{SCRIPT} {QUESTION}"
    assert detail.count("&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt; Leave policy") == 2  # chunks
    assert twin(client, "/rows/script.json")["champion_answer"]["chunks"][0]["text"] == CHUNK


def test_bad_parameters_get_400_with_the_fix(client: TestClient) -> None:
    for url, words in [
        ("/?since=last%20week", "since='last week' is not an age or a date. Fix:"),
        ("/rows?since=soon", "since='soon'"),
        ("/rows?outcome=sideways", "outcome='sideways' is not known. Fix: use one of disagree, challenger"),
        ("/rows?limit=0", "limit='0'"),
        ("/rows?limit=lots", "expected a whole number from 1 to 500"),
        ("/rows?tag=dept", "tag='dept': expected KEY=VALUE"),
        ("/rows?after=garbage", "after='garbage' is not a cursor of this dashboard"),
    ]:
        html = get_page(client, url, status=400)
        assert words in html.text, url
        assert html.all(id="error", data_status="400")
        split = urlsplit(url)
        json_path = "/index.json" if split.path == "/" else f"{split.path}.json"
        error = twin(client, f"{json_path}?{split.query}", status=400)
        assert words in error["error"] and error["status"] == 400
    assert get_page(client, "/nowhere", status=404).all(id="error", data_status="404")
    assert client.post("/").status_code == 405
    assert client.get("/healthz").text == "ok"


def test_a_cursor_stays_valid_as_new_rows_arrive(seeded: Store, client: TestClient) -> None:
    first = twin(client, "/rows.json?limit=5")
    seeded.shadow_rows.write_shadow_rows([make_row("newest", 0.01, "b", SAME, SAME)])
    seeded.shadow_judgments.save_shadow_judgments(
        [
            record.model_copy(update={"row_id": "newest"})
            for row, record in seeded.shadow_browse.browse_shadow_judgments(limit=1)
        ]
    )
    query = parse_qs(urlsplit(first["links"]["next_json"]).query)
    second = twin(client, f"/rows.json?limit=5&after={query['after'][0]}")
    shown = [r["id"] for r in first["rows"]] + [r["id"] for r in second["rows"]]
    assert len(set(shown)) == 10 and "newest" not in shown
    assert twin(client, "/rows.json?limit=1")["rows"][0]["id"] == "newest"


def test_served_over_http(seeded: Store, store_url: str) -> None:
    with serve_in_thread(create_app(store_url)) as base:
        response = httpx.get(f"{base}/", timeout=10)
        assert response.status_code == 200 and 'id="headline"' in response.text
        assert len(Page(response.text).all("div", class_="card")) == 2
        assert httpx.get(f"{base}/healthz", timeout=10).text == "ok"
        assert httpx.get(f"{base}/rows.json?limit=2", timeout=10).json()["next"]


def test_empty_store(store_url: str) -> None:
    with TestClient(create_app(store_url)) as empty:
        data = twin(empty, "/index.json")
        assert data["headline"] == [] and data["judged"] == 0 and data["by_day"] == []
        html = get_page(empty, "/")
        assert html.all(id="headline") and html.all(id="empty")
        assert twin(empty, "/rows.json")["rows"] == []
        assert get_page(empty, "/rows").all(id="rows")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_cli_refuses_a_port_in_use_and_a_bad_store(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve_in_thread(create_app(store_url)) as base:
        port = str(urlsplit(base).port)
        assert main(["shadow", "dashboard", "--db", store_url, "--port", port]) == 2
    err = capsys.readouterr().err
    assert re.search(
        r"cannot listen on 127\.0\.0\.1:\d+: .*Fix: choose another --port", " ".join(err.split())
    )
    bad_store = "postgresql://nobody@127.0.0.1:1/x"
    assert main(["shadow", "dashboard", "--db", bad_store, "--port", str(free_port())]) == 2
    assert "Cannot open the store" in capsys.readouterr().err
    assert main(["shadow", "dashboard", "--db", store_url, "--port", "0"]) == 2  # typer: out of range


def test_the_overview_is_reused_for_cache_s_seconds(
    seeded: Store, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]  # a clock the test moves, so a slow machine cannot age the kept overview
    monkeypatch.setattr("ragreplay.web.app.overview_clock", lambda: clock[0])

    def judged(client: TestClient, since: str = "7d") -> int:
        return int(twin(client, f"/index.json?since={since}")["judged"])

    with (
        TestClient(create_app(store_url, cache_s=30)) as cached,
        TestClient(create_app(store_url, cache_s=0)) as live,
    ):
        before = judged(cached)
        assert judged(cached, "") == before == judged(live)  # "" is the default window, 7d
        seeded.shadow_rows.write_shadow_rows([make_row("later", 0.02, "c", SAME, SAME)])
        seeded.shadow_judgments.save_shadow_judgments(
            [
                record.model_copy(update={"row_id": "later", "challenger": "c"})
                for _, record in seeded.shadow_browse.browse_shadow_judgments(limit=1)
            ]
        )
        assert judged(live) == before + 1
        assert judged(cached) == before  # within cache_s: the kept overview
        assert twin(cached, "/rows.json?limit=1")["rows"][0]["id"] == "later"  # lists are always fresh
        clock[0] += 29.9
        assert judged(cached) == before
        clock[0] += 0.2
        assert judged(cached) == before + 1


def test_benchmark_script_small_run(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "dashboard_pages.py"
    db = tmp_path / "bench.db"
    args = [sys.executable, str(script), "--db", str(db), "--rows", "300", "--days", "10", "--reps", "1"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True)
    result = json.loads(out.stdout)
    assert result["rows"] == 300 and result["backend"] == "sqlite"
    assert 0 < result["judged_in_7d"] < 300
    assert set(result["ms"]) >= {"/?since=7d", "/rows", "each later page of /rows.json"}
    assert all(ms > 0 for ms in result["ms"].values())


def test_every_response_carries_the_security_headers(client: TestClient) -> None:
    for url in [
        "/",
        "/index.json",
        "/rows",
        "/rows.json",
        "/rows/long",
        "/rows/long.json",
        "/nowhere",
        "/healthz",
    ]:
        response = client.get(url)
        csp = response.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp and "script-src" not in csp, (
            url
        )
        assert response.headers["x-frame-options"] == "DENY", url
        assert response.headers["x-content-type-options"] == "nosniff", url


def test_abusive_parameters_get_400_not_500_or_503(client: TestClient, store_url: str) -> None:
    for url, words in [
        ("/?since=999999999d", "reaches back past year 1"),
        ("/rows?since=999999999d", "reaches back past year 1"),
        ("/rows?challenger=b%00c", "holds a NUL"),
        ("/rows?tag=dept%3Dh%00r", "holds a NUL"),
        (f"/rows?challenger={'x' * 3000}", "too long"),
    ]:
        response = client.get(url)
        assert response.status_code == 400 and words in response.text, url
        assert "postgres@" not in response.text and "127.0.0.1" not in response.text, url


def test_a_huge_question_is_cut_in_the_list_and_whole_on_its_page(
    seeded: Store, client: TestClient, store_url: str
) -> None:
    huge = "How many leave days " + "and what else " * 15_000
    seeded.shadow_rows.write_shadow_rows([make_row("huge", 0.05, "b", "x", "y", query=huge)])
    assert main(["shadow", "judge", "--db", store_url, "--judge", "fake:default", "--since", "30d"]) == 0
    listed = twin(client, "/rows.json?limit=500")
    (row,) = [r for r in listed["rows"] if r["id"] == "huge"]
    assert len(row["question"]) <= 280 and row["question"].endswith("…")
    assert huge not in client.get("/rows?limit=500").text
    assert twin(client, "/rows/huge.json")["question"] == huge


def test_pages_name_the_store_without_its_host_or_user(client: TestClient) -> None:
    page = client.get("/").text
    assert "127.0.0.1" not in page and "postgres@" not in page
