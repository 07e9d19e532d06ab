"""The store on SQLite and PostgreSQL: migrations, ingest, cases, rewrites, runs, results and cache."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Connection, inspect, text

from ragreplay.core.runs import ResultRecord, ResultStatus, RunRecord, RunStatus, SourceRecord
from ragreplay.core.types import (
    Answer,
    Case,
    Conversation,
    Feedback,
    Fit,
    Judgment,
    Message,
    Rewrite,
    Role,
    Skip,
    SkipReason,
    Verdict,
)
from ragreplay.store import Store, StoreError
from ragreplay.store import cases as cases_module
from ragreplay.store.connect import parse_store_url
from ragreplay.store.migrations import MIGRATIONS, Migration, check_order, latest_version, migrate
from ragreplay.store.schema import metadata

T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)

Item = tuple[Conversation, list[Case], list[Skip]]


def conversation(conv_id: str, n_turns: int = 1, tags: dict[str, str] | None = None) -> Item:
    """A conversation of ``n_turns`` question/answer pairs, every answer labelled, the first one skipped."""
    messages: list[Message] = []
    cases: list[Case] = []
    for turn in range(n_turns):
        messages.append(Message(role=Role.HUMAN, content=f"{conv_id} q{turn}"))
        messages.append(Message(role=Role.AI, content=f"{conv_id} a{turn}", feedback=Feedback.GOOD))
        cases.append(
            Case(
                id=f"case_{conv_id}_{turn}",
                conversation_id=conv_id,
                turn_index=2 * turn + 1,
                query=f"{conv_id} q{turn}",
                history=tuple(messages[:-2]),
                old_answer=f"{conv_id} a{turn}",
                feedback=Feedback.GOOD if turn % 2 == 0 else Feedback.BAD,
                tags=tags or {},
                ts=T0 + timedelta(minutes=turn),
            )
        )
    conv = Conversation(id=conv_id, messages=tuple(messages), tags=tags or {})
    skips = [Skip(conversation_id=conv_id, message_index=0, reason=SkipReason.NO_FEEDBACK)]
    return conv, cases, skips


def source(source_id: str = "src_aaaa", at: datetime = T0) -> SourceRecord:
    return SourceRecord(id=source_id, path=f"/data/{source_id}.jsonl", format="jsonl", ingested_at=at)


def run_record(run_id: str, created_at: datetime = T0, status: RunStatus = RunStatus.RUNNING) -> RunRecord:
    return RunRecord(
        id=run_id,
        created_at=created_at,
        status=status,
        target_name="fake",
        target_version="tv1",
        judge_name="fake:judge",
        judge_prompt_version="fit-v1",
        rewriter_name="fake:rewriter",
        rewrite_prompt_version="rw-v1",
        config_hash="cfg1",
        dataset_hash="ds1",
        n_cases=2,
        config={"target": {"name": "fake", "k": 3}, "ünïcode": [1, 2.5, None]},
    )


# --- migrations ---------------------------------------------------------------------------------------


def _versions(conn: Connection) -> list[tuple[int, str]]:
    return [
        (r[0], str(r[1])) for r in conn.execute(text("SELECT version, applied_at FROM schema_migrations"))
    ]


def test_new_store_is_at_latest_version_and_reopening_changes_nothing(store_url: str) -> None:
    with Store.open(store_url) as first:
        assert first.schema_version() == latest_version() == len(MIGRATIONS)
        with first._engine.connect() as conn:
            before = _versions(conn)
    with Store.open(store_url) as second:
        with second._engine.connect() as conn:
            assert _versions(conn) == before
        assert [v for v, _ in before] == list(range(1, latest_version() + 1))


def test_migrated_schema_matches_the_tables_the_queries_use(store: Store) -> None:
    with store._engine.connect() as conn:
        inspector = inspect(conn)
        for table in metadata.sorted_tables:
            stored = {c["name"] for c in inspector.get_columns(table.name)}
            assert stored == {c.name for c in table.columns}, table.name


def test_migrations_run_in_order_once_each(store_url: str) -> None:
    calls: list[str] = []

    def step(version: int, name: str) -> Migration:
        return Migration(version, name, lambda conn: calls.append(name))

    plan = [step(1, "one"), step(2, "two"), step(3, "three")]
    with Store.open(store_url) as store, store._engine.begin() as conn:
        conn.execute(text("DELETE FROM schema_migrations"))  # pretend nothing ran, then use our own list
        assert migrate(conn, store.url, plan[:2]) == [1, 2]
        assert migrate(conn, store.url, plan[:2]) == []
        assert migrate(conn, store.url, plan) == [3]
        assert [r[0] for r in conn.execute(text("SELECT version FROM schema_migrations ORDER BY 1"))] == [
            1,
            2,
            3,
        ]
    assert calls == ["one", "two", "three"]


def test_migration_list_out_of_order_is_refused() -> None:
    def noop(conn: Connection) -> None:
        return None

    with pytest.raises(ValueError, match="version 3, expected 2"):
        check_order([Migration(1, "a", noop), Migration(3, "c", noop)])


def test_failing_migration_rolls_back_its_ddl_and_version(store_url: str) -> None:
    def create(conn: Connection) -> None:
        conn.execute(text("CREATE TABLE extra_table (x INTEGER)"))

    def boom(conn: Connection) -> None:
        raise RuntimeError("boom")

    plan = [
        *MIGRATIONS,
        Migration(len(MIGRATIONS) + 1, "create", create),
        Migration(len(MIGRATIONS) + 2, "boom", boom),
    ]
    with Store.open(store_url) as store:
        with pytest.raises(RuntimeError), store._engine.begin() as conn:
            migrate(conn, store.url, plan)
        with store._engine.connect() as conn:
            assert not inspect(conn).has_table("extra_table")
        assert store.schema_version() == latest_version()


def test_store_newer_than_the_code_is_refused(store_url: str) -> None:
    with Store.open(store_url) as store, store._engine.begin() as conn:
        conn.execute(
            text("INSERT INTO schema_migrations (version, name, applied_at) VALUES (:v, 'future', :t)"),
            {"v": latest_version() + 1, "t": T0.replace(tzinfo=None)},
        )
    with pytest.raises(StoreError, match=rf"schema version {latest_version() + 1}.*Fix: upgrade ragreplay"):
        Store.open(store_url)


# --- ingest -------------------------------------------------------------------------------------------


def test_write_source_counts_and_reads_back(store: Store) -> None:
    stored = store.cases.write_source(source(), [conversation("c1", 2), conversation("c2", 1)])
    assert (stored.n_conversations, stored.n_cases, stored.n_skipped) == (2, 3, 2)
    assert stored.ingested_at == T0 and stored.ingested_at.tzinfo is not None
    assert store.cases.has_source("src_aaaa") and not store.cases.has_source("src_a")
    assert store.cases.list_sources() == [stored]
    assert store.cases.get_source("src_a") == stored
    assert store.cases.count_cases() == 3
    assert store.cases.skip_counts() == {SkipReason.NO_FEEDBACK: 2}
    conv, cases, _ = conversation("c1", 2)
    assert store.cases.get_conversation("c1") == conv
    assert store.cases.get_cases(["case_c1_1", "nope", "case_c1_0"]) == {c.id: c for c in cases}


def test_write_source_is_atomic_when_the_items_raise_midway(store: Store) -> None:
    def items() -> Iterator[Item]:
        for i in range(1500):  # more than one batch has been flushed when it fails
            yield conversation(f"c{i:05d}")
        raise ValueError("bad line 1501")

    with pytest.raises(ValueError, match="bad line"):
        store.cases.write_source(source(), items())
    assert not store.cases.has_source("src_aaaa")
    assert store.cases.count_cases() == 0
    assert store.cases.get_conversation("c00000") is None
    assert store.cases.skip_counts() == {}


def test_reingest_is_a_no_op_and_cases_keep_their_first_source(store: Store) -> None:
    store.cases.write_source(source("src_one"), [conversation("c1", 2)])
    first = list(store.cases.iter_cases())
    store.cases.write_source(source("src_one"), [conversation("c1", 2)])
    store.cases.write_source(source("src_two", T0 + timedelta(hours=1)), [conversation("c1", 2)])
    assert list(store.cases.iter_cases()) == first
    assert store.cases.count_cases() == 2
    assert list(store.cases.iter_cases(source_ids=["src_two"])) == []
    assert [s.id for s in store.cases.list_sources()] == ["src_one", "src_two"]


def test_a_longer_export_of_a_conversation_replaces_it(store: Store) -> None:
    store.cases.write_source(source("src_one"), [conversation("c1", 1)])
    longer = conversation("c1", 3)
    store.cases.write_source(source("src_two"), [longer])
    stored = store.cases.get_conversation("c1")
    assert stored is not None and len(stored.messages) == 6
    assert [c.turn_index for c in store.cases.iter_cases()] == [1, 3, 5]
    assert [c.turn_index for c in store.cases.iter_cases(source_ids=["src_two"])] == [3, 5]


@pytest.mark.parametrize(("first_page", "batch_size"), [(64, 2), (1, 4)])
def test_iter_cases_orders_and_filters(
    store: Store, monkeypatch: pytest.MonkeyPatch, first_page: int, batch_size: int
) -> None:
    monkeypatch.setattr(cases_module, "BATCH_SIZE", batch_size)  # page through several reads
    monkeypatch.setattr(cases_module, "FIRST_PAGE", first_page)  # (1, 4): pages of 1, 2, 4, 4 cases
    store.cases.write_source(
        source("src_one"), [conversation("cb", 3, {"dept": "hr"}), conversation("ca", 2)]
    )
    store.cases.write_source(source("src_two"), [conversation("cc", 2, {"dept": "it"}), conversation("B", 1)])
    order = [(c.conversation_id, c.turn_index) for c in store.cases.iter_cases()]
    expected = [("B", 1), ("ca", 1), ("ca", 3), ("cb", 1), ("cb", 3), ("cb", 5), ("cc", 1), ("cc", 3)]
    assert order == expected
    assert {c.conversation_id for c in store.cases.iter_cases(source_ids=["src_two"])} == {"cc", "B"}
    assert [c.id for c in store.cases.iter_cases(tags={"dept": "hr"})] == [
        "case_cb_0",
        "case_cb_1",
        "case_cb_2",
    ]
    assert list(store.cases.iter_cases(source_ids=["src_two"], tags={"dept": "hr"})) == []
    assert list(store.cases.iter_cases(source_ids=[])) == []
    assert store.cases.skip_counts(["src_two"]) == {SkipReason.NO_FEEDBACK: 2}


def test_source_prefix_lookup(store: Store) -> None:
    store.cases.write_source(source("src_ab1"), [])
    store.cases.write_source(source("src_ab2"), [])
    assert store.cases.get_source("src_ab1") is not None
    assert store.cases.get_source("zzz") is None
    with pytest.raises(StoreError, match="ambiguous"):
        store.cases.get_source("src_ab")


# --- rewrites, runs, results, cache -------------------------------------------------------------------


def test_pin_rewrite_first_writer_wins(store: Store) -> None:
    first = Rewrite(
        original="and him?", query="Who is Bob?", rewritten=True, model="fake", prompt_version="r1"
    )
    other = Rewrite(original="and him?", query="Who is Robert?", rewritten=True)
    assert store.rewrites.get_rewrite("case_x") is None
    assert store.rewrites.pin_rewrite("case_x", first, "fake@r1") == first
    assert store.rewrites.pin_rewrite("case_x", other, "fake@r1") == first
    assert store.rewrites.get_rewrite("case_x", "fake@r1") == first
    # pins are per rewriter version: another one pins its own, and the first pin stays the case's default
    assert store.rewrites.pin_rewrite("case_x", other, "fake@r2") == other
    assert store.rewrites.get_rewrite("case_x", "fake@r2") == other
    assert store.rewrites.get_rewrite("case_x") == first
    assert store.rewrites.get_rewrite("case_x", "fake@r3") is None
    store.rewrites.pin_rewrite("case_y", other, "fake@r1")
    store.rewrites.pin_rewrite("case_z", other, "fake@r1")
    assert store.rewrites.unpin_rewrites(["case_x", "missing"]) == 2
    assert store.rewrites.get_rewrite("case_x") is None
    assert store.rewrites.unpin_rewrites() == 2
    assert store.rewrites.get_rewrite("case_y") is None


def test_run_lifecycle_and_prefix_lookup(store: Store) -> None:
    store.runs.create_run(run_record("run_abc1", T0), ["case_1", "case_2"])
    store.runs.create_run(run_record("run_abc2", T0 + timedelta(minutes=5)), ["case_1"])
    assert store.runs.result_counts("run_abc1") == {ResultStatus.PENDING: 2}
    assert store.runs.get_run("run_abc1") == run_record("run_abc1", T0)
    assert store.runs.get_run("run_abc2") == run_record("run_abc2", T0 + timedelta(minutes=5))
    store.runs.create_run(run_record("run_zed", T0 - timedelta(days=1), RunStatus.DONE), [])
    assert store.runs.get_run("run_z") == run_record("run_zed", T0 - timedelta(days=1), RunStatus.DONE)
    assert store.runs.get_run("run_x") is None
    assert store.runs.get_run("run%") is None  # LIKE wildcards in a prefix are literal
    assert store.runs.get_run("") is None
    with pytest.raises(StoreError, match=r"ambiguous.*run_abc1.*run_abc2"):
        store.runs.get_run("run_abc")
    assert [r.id for r in store.runs.list_runs()] == ["run_abc2", "run_abc1", "run_zed"]
    assert [r.id for r in store.runs.list_runs(limit=1)] == ["run_abc2"]

    assert store.runs.find_latest_run("cfg1", "ds1") == store.runs.get_run("run_abc2")
    finished = T0 + timedelta(hours=1)
    store.runs.set_run_status("run_abc2", RunStatus.DONE, finished_at=finished)
    done = store.runs.get_run("run_abc2")
    assert done is not None and done.status is RunStatus.DONE and done.finished_at == finished
    assert store.runs.find_latest_run("cfg1", "ds1") == done  # a finished run is found too: to re-show it
    store.runs.set_run_status("run_abc2", RunStatus.FAILED)
    store.runs.set_run_status("run_abc1", RunStatus.INTERRUPTED)
    assert store.runs.find_latest_run("cfg1", "ds1") == store.runs.get_run("run_abc1")
    assert store.runs.find_latest_run("cfg1", "other") is None
    with pytest.raises(StoreError, match="no run"):
        store.runs.set_run_status("run_missing", RunStatus.DONE)
    with pytest.raises(StoreError, match="already exists"):
        store.runs.create_run(run_record("run_abc1"), [])


def test_datetimes_come_back_in_utc(store: Store) -> None:
    local = datetime(2026, 10, 1, 11, 30, tzinfo=timezone(timedelta(hours=2)))
    store.runs.create_run(run_record("run_tz", local), [])
    got = store.runs.get_run("run_tz")
    assert got is not None and got.created_at == local and got.created_at.utcoffset() == timedelta(0)


def test_results_upsert_and_load_in_case_order(store: Store) -> None:
    store.cases.write_source(source(), [conversation("cb", 2), conversation("ca", 1)])
    ids = ["case_cb_1", "orphan_case", "case_ca_0", "case_cb_0"]
    store.runs.create_run(run_record("run_1"), ids)
    done = ResultRecord(
        run_id="run_1",
        case_id="case_cb_0",
        status=ResultStatus.DONE,
        rewrite=Rewrite(original="q", query="q", rewritten=False),
        answer=Answer(text="new", latency_ms=12.5, extra={"k": [1, 2]}),
        judgment=Judgment(fit=Fit.FIT, reason="same", judge="fake", prompt_version="fit-v1"),
        verdict=Verdict.GOOD_FIT,
    )
    store.runs.save_result(
        ResultRecord(run_id="run_1", case_id="case_cb_0", status=ResultStatus.ERROR, error="x")
    )
    store.runs.save_result(done)
    loaded = store.runs.load_results("run_1")
    assert [r.case_id for r in loaded] == ["case_ca_0", "case_cb_0", "case_cb_1", "orphan_case"]
    assert loaded[1] == done
    assert store.runs.result_counts("run_1") == {ResultStatus.PENDING: 3, ResultStatus.DONE: 1}


def test_results_can_be_written_from_another_thread(store: Store) -> None:
    store.runs.create_run(run_record("run_t"), ["case_1"])
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            store.runs.save_result(ResultRecord(run_id="run_t", case_id="case_1", status=ResultStatus.DONE))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    thread.join()
    assert errors == []
    assert store.runs.result_counts("run_t") == {ResultStatus.DONE: 1}


def test_cache_put_get_is_idempotent(store: Store) -> None:
    request = {"messages": [{"role": "user", "content": "hi"}], "temperature": 0.0}
    assert store.cache.cache_get("k1") is None
    store.cache.cache_put("k1", "fake:m", request, {"text": "hello", "usage": {"input": 3, "output": 1}})
    store.cache.cache_put("k1", "fake:m", request, {"text": "different"})
    assert store.cache.cache_get("k1") == {"text": "hello", "usage": {"input": 3, "output": 1}}
    assert store.cache.cache_count() == 1


def test_a_second_open_sees_the_data(store_url: str) -> None:
    with Store.open(store_url) as writer:
        writer.cases.write_source(source(), [conversation("c1", 2)])
        writer.cache.cache_put("k", "m", {}, {"text": "t"})
        with Store.open(store_url) as reader:  # both open at once
            assert reader.cases.count_cases() == 2
    with Store.open(store_url) as again:
        assert [c.id for c in again.cases.iter_cases()] == ["case_c1_0", "case_c1_1"]
        assert again.cache.cache_get("k") == {"text": "t"}


# --- URLs and errors ----------------------------------------------------------------------------------


def test_paths_and_urls_are_normalised(tmp_path: object) -> None:
    url, shown = parse_store_url("postgresql://me:s3cret@db.example:5432/rr")
    assert url.drivername == "postgresql+psycopg" and url.password == "s3cret"
    assert shown == "postgresql://me:***@db.example:5432/rr"
    assert parse_store_url("postgres://me@db/rr")[0].drivername == "postgresql+psycopg"
    url, shown = parse_store_url("relative/store.db")
    assert (
        url.drivername == "sqlite" and url.database is not None and url.database.endswith("relative/store.db")
    )
    assert shown.startswith("sqlite:////")


def test_a_plain_path_creates_a_sqlite_store_with_wal(tmp_path: pytest.TempPathFactory) -> None:
    path = f"{tmp_path}/nested/dir/store.db"
    with Store.open(path) as store, store._engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("mysql://me:s3cret@localhost/rr", r"Unsupported store URL 'mysql://me:\*\*\*@localhost/rr'.*Fix:"),
        ("postgresql+psycopg2://me:s3cret@localhost/rr", r"Unsupported PostgreSQL driver.*Fix:"),
        (
            "postgresql://me:s3cret@127.0.0.1:1/rr",
            r"Cannot open the store at postgresql://me:\*\*\*@127.0.0.1:1/rr.*Fix:",
        ),
        ("   ", "empty"),
    ],
)
def test_bad_urls_name_the_url_without_its_password(url: str, expected: str) -> None:
    with pytest.raises(StoreError, match=expected) as info:
        Store.open(url)
    assert "s3cret" not in str(info.value)


def test_a_file_that_is_not_a_store_is_reported(tmp_path: pytest.TempPathFactory) -> None:
    path = f"{tmp_path}/notes.db"
    with open(path, "w") as handle:
        handle.write("this is not a database, just some text that is long enough to have a header" * 20)
    with pytest.raises(StoreError, match=r"Cannot open the store at sqlite:///.*notes.db.*Fix:"):
        Store.open(path)


def test_an_in_memory_store_works_for_quick_experiments() -> None:
    with Store.open(":memory:") as store:
        store.cases.write_source(source(), [conversation("c1", 1)])
        assert [c.id for c in store.cases.iter_cases()] == ["case_c1_0"]
        assert store.url == "sqlite://"


def test_shadow_rows_written_before_the_column_rename_read_back_after_it(store_url: str) -> None:
    from ragreplay.store.connect import create_store_engine

    engine = create_store_engine(parse_store_url(store_url)[0])
    try:
        with engine.connect() as conn, conn.begin():
            assert migrate(conn, store_url, MIGRATIONS[:5]) == [1, 2, 3, 4, 5]
            conn.execute(
                text(
                    "INSERT INTO shadow_rows (id, ts, request_id, challenger, query, tags, champion, candidate) "
                    "VALUES ('r1', :ts, 'q1', 'b', 'question', '{}', :champion, :candidate)"
                ),
                {
                    "ts": datetime(2026, 11, 1, tzinfo=UTC),
                    "champion": '{"text": "old answer"}',
                    "candidate": '{"text": "new answer"}',
                },
            )
    finally:
        engine.dispose()
    with Store.open(store_url) as store:
        assert store.schema_version() == latest_version()
        (row,) = store.shadow_rows.iter_shadow_rows()
    assert (row.champion_answer.text, row.challenger_answer.text) == ("old answer", "new answer")
