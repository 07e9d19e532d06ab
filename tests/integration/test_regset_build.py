"""Building regression sets on SQLite and PostgreSQL: candidates from the shadow log (judgments, scores,
feedback) and from an ingested log, strata and shortfalls, the recipe, reproducible builds, pins and drops,
the graduation hook; versions: diff, export and import (bad files write nothing), pin and drop."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ragreplay.core.regset import strata_counts
from ragreplay.core.types import Feedback, Fit, Rewrite
from ragreplay.errors import ConfigError, InputError
from ragreplay.regset.build import TokenHashEmbedder, build_regset, rebuild
from ragreplay.regset.candidates import replay_candidates, shadow_candidates
from ragreplay.regset.versions import (
    diff_versions,
    drop_item,
    export_version,
    import_version,
    load_version,
    pin_item,
)
from ragreplay.shadow.privacy import default_redactor, no_redaction
from ragreplay.store import Store
from regset_data import KINDS, ingest_production, judgment_record, outcome, seed_shadow

NOW = datetime.now(UTC).replace(microsecond=0)
WEEK = NOW - timedelta(days=7)
HASH = TokenHashEmbedder()
SIZES = {"win": 5, "contested": 4, "wound": 3}


def build(store: Store, **options: object) -> object:
    kwargs: dict[str, object] = {"sizes": SIZES, "seed": 7, "sources": ("shadow",), "embed_with": HASH}
    kwargs |= options
    return build_regset(store, WEEK, NOW, **kwargs)  # type: ignore[arg-type]


# --- candidates -------------------------------------------------------------------------------------------


def test_shadow_candidates_carry_judgments_scores_and_feedback(store: Store) -> None:
    seeded = seed_shadow(store, NOW)
    found = shadow_candidates(store, WEEK, NOW)
    assert found.counts.shadow_rows == 32  # 30 + the twin + the failed row; the 10-day-old row is outside
    assert found.counts.shadow_champion_failed == 1 and found.counts.shadow_judged == 31
    assert found.counts.shadow_with_feedback == 7 + 1 + 4  # 7 GOOD wins (+ the twin row), 4 BAD wounds
    by_id = {c.source_id: c for c in found.items}
    assert set(by_id) == {f"row-{n:03d}" for n in range(1, 31)} | {"row-001c"}
    liked = by_id["row-001"]
    assert (liked.feedback, liked.agreement, liked.judge_winner, liked.consistent) == (
        Feedback.GOOD,
        Fit.NO_FIT,
        "champion",
        True,
    )
    assert (liked.champion_score, liked.champion_min_axis, liked.challenger_score) == (4.0, 4, 3.0)
    assert (liked.request_id, liked.challenger, by_id["row-001c"].challenger) == ("req-001", "b", "c")
    low = by_id["row-029"]  # a wound: the champion scored 1, the challenger 4, in both orders
    assert (low.champion_score, low.challenger_score, low.judge_winner) == (1.0, 4.0, "challenger")
    assert by_id["row-015"].consistent is False and by_id["row-015"].judge_winner == "tie"
    assert {c.key for c in found.items}.isdisjoint(seeded.outside)
    assert all("secret-user-hash" not in json.dumps(c.model_dump(mode="json")) for c in found.items)
    assert len(shadow_candidates(store, WEEK, NOW - timedelta(hours=50)).items) < len(found.items)  # until


def test_replay_candidates_from_an_ingested_log(store: Store) -> None:
    ingest_production(store)
    since, until = datetime(2026, 9, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    found = replay_candidates(store, since, until, default_redactor)
    assert found.counts.replay_cases == 216
    assert found.counts.replay_follow_ups_unpinned == 69  # no pinned rewrite: cannot be asked on their own
    assert len(found.items) == 216 - 69
    cases = {c.id: c for c in store.cases.iter_cases()}
    for candidate in found.items:
        case = cases[candidate.source_id]
        assert candidate.feedback == case.feedback and candidate.source == "replay"
        assert candidate.question == default_redactor(case.query)
        assert candidate.champion_chunk_ids == [chunk.id for chunk in case.retrieved]
    assert all(case.user_id for case in cases.values())  # the log has user ids ...
    dumped = json.dumps([c.model_dump(mode="json") for c in found.items])
    assert all(case.user_id not in dumped.split('"') for case in cases.values())  # ... no candidate holds one
    # a pinned rewrite makes a follow-up askable: it is asked as the rewrite
    follow_up = next(
        c for c in cases.values() if c.history and c.id not in {x.source_id for x in found.items}
    )
    store.rewrites.pin_rewrite(
        follow_up.id, Rewrite(original=follow_up.query, query="standalone?", rewritten=True), "fake:rw@1"
    )
    again = replay_candidates(store, since, until, no_redaction)
    assert {c.source_id: c.question for c in again.items}[follow_up.id] == "standalone?"
    assert again.counts.replay_rewritten == 1
    november = replay_candidates(store, datetime(2026, 11, 1, tzinfo=UTC), until, no_redaction)
    assert 0 < november.counts.replay_cases < 216  # the window applies to cases with a ts


# --- build ------------------------------------------------------------------------------------------------


def test_build_fills_strata_records_the_recipe_and_stores_the_version(store: Store) -> None:
    seeded = seed_shadow(store, NOW)
    built = build(store, note="monday")
    record = built.record  # type: ignore[attr-defined]
    assert record.version == 1 and record.id.startswith("rs_") and record.note == "monday"
    assert record.counts == {"win": 5, "contested": 4, "wound": 3} and record.shortfall() == {}
    recipe = record.recipe
    assert recipe["kind"] == "build" and recipe["seed"] == 7 and recipe["sizes"] == SIZES | {}
    assert recipe["sources"] == ["shadow"] and recipe["margin"] == 0.5 and recipe["embedder"] == "hash"
    assert (recipe["near_duplicate"], recipe["cluster_threshold"]) == (0.95, 0.5)
    assert datetime.fromisoformat(recipe["since"]) == WEEK and datetime.fromisoformat(recipe["until"]) == NOW
    assert recipe["overrides"] == {} and recipe["graduated"] == [] and len(record.inputs_digest) == 32
    assert recipe["found"]["pool_sizes"] == {"win": 14, "contested": 9, "wound": 7}
    items = store.regsets.load_items(record.id)
    assert sorted(i.key for i in items) == sorted(i.key for i in built.items)  # type: ignore[attr-defined]
    for item in items:
        assert seeded.strata[item.key] == item.stratum
        assert 0 < item.inclusion_probability <= 1 and item.weight == item.count / item.inclusion_probability


def test_strata_that_cannot_be_filled_are_reported_not_an_error(store: Store) -> None:
    seed_shadow(store, NOW)
    built = build(store, sizes={"win": 80, "contested": 60, "wound": 60})
    record = built.record  # type: ignore[attr-defined]
    assert record.counts == dict(KINDS)
    assert record.shortfall() == {"win": 66, "contested": 51, "wound": 53}
    assert all(i.inclusion_probability == 1.0 for i in built.items)  # type: ignore[attr-defined]
    # every question was asked once: the request answered by two challengers counts once
    assert all(i.count == 1 for i in built.items)  # type: ignore[attr-defined]


def test_same_store_and_recipe_give_identical_items(store: Store) -> None:
    seed_shadow(store, NOW)
    first, second = build(store), build(store)
    a, b = first.record, second.record  # type: ignore[attr-defined]
    assert (a.version, b.version) == (1, 2) and a.inputs_digest == b.inputs_digest
    assert store.regsets.load_items(a.id) == store.regsets.load_items(b.id)
    assert rebuild(store, a, HASH).identical
    other = build(store, seed=8).record  # type: ignore[attr-defined]
    assert store.regsets.load_items(other.id) != store.regsets.load_items(a.id)
    store.shadow_feedback.write_shadow_feedback([])  # content unchanged: still identical
    assert rebuild(store, a, HASH).identical
    rows = {r.id: r for r in store.shadow_rows.iter_shadow_rows()}
    store.shadow_judgments.save_shadow_judgments(
        [judgment_record(rows["row-002"], Fit.NO_FIT, outcome("x", True, 1, 1))]
    )
    assert not rebuild(store, a, HASH).identical  # the store changed: so may the items


def test_the_packaged_embedder_is_the_default(store: Store) -> None:
    seed_shadow(store, NOW)
    built = build_regset(store, WEEK, NOW, SIZES, seed=7, sources=("shadow",))
    record = built.record
    assert record.recipe["embedder"] == "use" and record.recipe["cluster_threshold"] == 0.6
    assert record.counts == {"win": 5, "contested": 4, "wound": 3}
    assert rebuild(store, record).identical


def test_both_sources_together(store: Store) -> None:
    seed_shadow(store, NOW)
    ingest_production(store)
    built = build_regset(
        store,
        datetime(2026, 9, 1, tzinfo=UTC),
        NOW,
        {"win": 30, "contested": 5, "wound": 30},
        sources=("shadow", "replay"),
        embed_with=HASH,
    )
    sources = {i.candidate.source for i in built.items}
    assert sources == {"shadow", "replay"}
    assert built.figures.read["replay_cases"] == 216 and built.figures.read["shadow_rows"] == 33
    assert built.record.counts == {"win": 30, "contested": 5, "wound": 30}


def test_overrides_drop_and_pin_and_the_graduation_hook(store: Store) -> None:
    seeded = seed_shadow(store, NOW)
    wounds = sorted(k for k, s in seeded.strata.items() if s == "wound")
    wins = sorted(k for k, s in seeded.strata.items() if s == "win")
    store.regsets.set_override(wounds[0], "drop", "a test question")
    pinned = wins[:2]
    for key in pinned:
        store.regsets.set_override(key, "pin", "always")
    built = build(store, sizes={"win": 3, "contested": 1, "wound": 7})
    items = {i.key: i for i in built.items}  # type: ignore[attr-defined]
    assert wounds[0] not in items and strata_counts(list(items.values()))["wound"] == 6
    assert all(items[k].pinned and items[k].inclusion_probability == 1.0 for k in pinned)
    assert strata_counts(list(items.values()))["win"] == 3
    assert built.record.recipe["overrides"] == {wounds[0]: "drop", pinned[0]: "pin", pinned[1]: "pin"}  # type: ignore[attr-defined]

    # the hook the gate feeds: a wound fixed in N consecutive gates graduates to a win
    graduated = build(store, sizes={"win": 20, "contested": 0, "wound": 20}, graduated=frozenset(wounds[1:3]))
    strata = {i.key: i.stratum for i in graduated.items}  # type: ignore[attr-defined]
    assert strata[wounds[1]] == strata[wounds[2]] == "win" and strata[wounds[3]] == "wound"
    assert graduated.record.recipe["graduated"] == sorted(wounds[1:3])  # type: ignore[attr-defined]
    reopened = build(store, sizes={"win": 0, "contested": 0, "wound": 20}, open_wounds=frozenset(wins[2:3]))
    assert {i.key: i.stratum for i in reopened.items}[wins[2]] == "wound"  # type: ignore[attr-defined]


def test_a_pin_outside_the_window_is_carried_from_its_last_version(store: Store) -> None:
    seeded = seed_shadow(store, NOW)
    first = build(store, sizes={"win": 14, "contested": 0, "wound": 0})
    key = sorted(k for k, s in seeded.strata.items() if s == "win")[0]
    assert pin_item(store, key, "keep it").version is not None
    later = build_regset(
        store, NOW - timedelta(hours=2), NOW, {"win": 2}, sources=("shadow",), embed_with=HASH
    )  # a window holding none of the seeded rows
    assert [(i.key, i.pinned) for i in later.items] == [(key, True)]
    assert later.figures.pins_carried == 1
    assert first.record.version == 1  # type: ignore[attr-defined]


def test_bad_recipes_are_config_errors(store: Store) -> None:
    with pytest.raises(ConfigError, match="not after --since"):
        build_regset(store, NOW, WEEK, SIZES)
    with pytest.raises(ConfigError, match="negative"):
        build_regset(store, WEEK, NOW, {"win": -1})
    with pytest.raises(ConfigError, match="--embedder 'bert'"):
        build_regset(store, WEEK, NOW, SIZES, embedder="bert")
    with pytest.raises(ConfigError, match="no source"):
        build_regset(store, WEEK, NOW, SIZES, sources=())
    with pytest.raises(
        ConfigError, match=r"fits a stratum \(0 shadow row\(s\), 0 replay case\(s\) read\): nothing"
    ):
        build_regset(store, WEEK, NOW, SIZES, embed_with=HASH)  # an empty window is not an empty version
    assert store.regsets.list_sets() == []


# --- versions ---------------------------------------------------------------------------------------------


def test_diff_two_versions(store: Store) -> None:
    seeded = seed_shadow(store, NOW)
    a = build(store, sizes={"win": 14, "contested": 9, "wound": 0}).record  # type: ignore[attr-defined]
    wins = sorted(k for k, s in seeded.strata.items() if s == "win")
    b = build(store, sizes={"win": 14, "contested": 0, "wound": 8}, open_wounds=frozenset(wins[:1])).record  # type: ignore[attr-defined]
    diff = diff_versions(store, "v1", f"v{b.version}")
    assert (diff.old.id, diff.new.id) == (a.id, b.id)
    assert {i.stratum for i in diff.added} == {"wound"} and len(diff.added) == 7
    assert {i.stratum for i in diff.removed} == {"contested"} and len(diff.removed) == 9
    assert [(o.key, o.stratum, n.stratum) for o, n in diff.moved] == [(wins[0], "win", "wound")]
    assert diff.added[0].candidate.question  # the questions come along
    with pytest.raises(ConfigError, match="no regression set 'v9'"):
        diff_versions(store, "v1", "v9")


def test_export_then_import_makes_an_identical_new_version(store: Store, tmp_path: Path) -> None:
    seed_shadow(store, NOW)
    built = build(store).record  # type: ignore[attr-defined]
    path = tmp_path / "set.jsonl"
    export_version(store, "latest", path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + 12 and json.loads(lines[0])["record"]["id"] == built.id
    imported = import_version(store, path)
    assert imported.record.version == 2 and imported.record.parent_id is None
    assert imported.items == store.regsets.load_items(built.id)
    assert imported.record.recipe["kind"] == "import"
    assert imported.record.recipe["imported_from"]["id"] == built.id
    assert imported.record.recipe["sizes"] == SIZES and "v1" in imported.record.note
    with pytest.raises(ConfigError, match="only built versions"):
        rebuild(store, imported.record)


def test_import_validates_every_line_and_writes_nothing(store: Store, tmp_path: Path) -> None:
    seed_shadow(store, NOW)
    build(store)
    good = tmp_path / "good.jsonl"
    export_version(store, "v1", good)
    lines = good.read_text(encoding="utf-8").splitlines()
    item = json.loads(lines[2])
    item["candidate"]["question"] = "edited by hand"
    worse = json.loads(lines[3])
    worse["inclusion_probability"] = 1.5
    del worse["stratum"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "\n".join([lines[0], lines[1], json.dumps(item), json.dumps(worse), "{not json", lines[1]]) + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as caught:
        import_version(store, bad)
    text = str(caught.value)
    assert f"{bad}:3: field 'key'" in text and "edited by hand" in text
    assert f"{bad}:4: field 'stratum'" in text and f"{bad}:4: field 'inclusion_probability'" in text
    assert f"{bad}:5: not valid JSON" in text and f"{bad}:6: field 'key'" in text and "line 2 too" in text
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"cut.jsonl:1: field 'record.counts'.*a cut file"):
        import_version(store, cut)
    header = tmp_path / "header.jsonl"
    header.write_text(lines[1] + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"header.jsonl:1: field 'format'"):
        import_version(store, header)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="empty"):
        import_version(store, empty)
    assert [r.version for r in store.regsets.list_sets()] == [1]  # nothing was written


def test_pin_and_drop_make_new_versions_from_the_latest(store: Store) -> None:
    seeded = seed_shadow(store, NOW)
    v1 = build(store).record  # type: ignore[attr-defined]
    items = store.regsets.load_items(v1.id)
    drop_key = next(i.key for i in items if i.stratum == "wound")
    dropped = drop_item(store, drop_key, "not a real question")
    assert dropped.version is not None and dropped.version.record.version == 2
    v2 = dropped.version
    assert drop_key not in {i.key for i in v2.items} and len(v2.items) == len(items) - 1
    assert (
        v2.record.parent_id == v1.id
        and "dropped" in v2.record.note
        and "not a real question" in v2.record.note
    )
    assert v2.record.counts["wound"] == 2 and v2.record.recipe["kind"] == "hand"
    assert v2.record.recipe["base_recipe"]["seed"] == 7
    assert store.regsets.overrides() == {drop_key: "drop"}

    random_item = next(i for i in v2.items if i.inclusion_probability < 1)
    pinned = pin_item(store, random_item.key, "the CAO clause")
    assert pinned.version is not None
    v3 = {i.key: i for i in pinned.version.items}
    assert v3[random_item.key].pinned and v3[random_item.key].inclusion_probability == 1.0
    assert v3[random_item.key].weight == random_item.count
    assert len(v3) == len(v2.items) and pinned.version.record.parent_id == v2.record.id
    assert [c["action"] for c in pinned.version.record.recipe["changes"]] == ["drop", "pin"]
    again = pin_item(store, random_item.key, "still")
    assert again.version is None and "already pinned" in again.message

    outside = next(k for k in seeded.strata if k not in {i.key for i in items})
    assert outside  # a seeded question v1 did not draw: in no version, so it cannot be pinned by key
    with pytest.raises(ConfigError, match="no regression set holds the key"):
        pin_item(store, outside, "x")
    restored = pin_item(store, drop_key, "after all")  # held by v1: comes back, pinned
    assert restored.version is not None and drop_key in {i.key for i in restored.version.items}
    assert "from v1" in restored.message
    with pytest.raises(ConfigError, match="--reason is empty"):
        drop_item(store, drop_key, "  ")
    assert load_version(store, "latest").record.version == 4
