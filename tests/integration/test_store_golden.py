"""Golden set versions in the store (SQLite and PostgreSQL): immutable versions numbered per name, identical
content saved again is a no-op, rows come back in order, a duplicate row id writes nothing."""

from __future__ import annotations

import pytest

from ragreplay.core.eval import EvalContext
from ragreplay.core.golden import GoldenRow, rows_hash
from ragreplay.core.review import HistoryTurn
from ragreplay.store import Store
from ragreplay.store.connect import StoreError

ROWS = [
    GoldenRow(
        id="q2",
        question="When is the bonus paid?",
        reference="With the April salary.",
        contexts=(EvalContext(id="bonus#2", text="The bonus is paid with the April salary."),),
        judgments={"bonus#2": 2},
        tags=("kind=single_hop",),
    ),
    GoldenRow(
        id="q1",
        question="And who is not eligible?",
        reference="Interns and agency staff.",
        tags=("kind=follow_up",),
        history=(
            HistoryTurn(role="human", content="What is the bonus?"),
            HistoryTurn(role="ai", content="10%."),
        ),
    ),
]


def test_versions_are_numbered_per_name_and_identical_content_is_a_no_op(store_url: str) -> None:
    with Store.open(store_url) as store:
        first, created = store.golden.save_version("hr", ROWS, {"source": "import", "file": "a.jsonl"})
        assert created and first.version == 1 and first.n_rows == 2 and first.ref == "hr@v1"
        assert first.content_hash == rows_hash(ROWS)
        again, created = store.golden.save_version("hr", ROWS, {"source": "import", "file": "b.jsonl"})
        assert (
            not created and again.id == first.id and again.recipe == {"source": "import", "file": "a.jsonl"}
        )
        second, created = store.golden.save_version("hr", ROWS[:1], {"source": "import"})
        assert created and second.version == 2
        other, _ = store.golden.save_version("legal", ROWS, {"source": "import"})
        assert other.version == 1 and other.id != first.id
        assert store.golden.load_rows(first.id) == ROWS  # order, history and contexts kept
        assert store.golden.get_version("hr") == second
        assert store.golden.get_version("hr", 1) == first
        assert store.golden.get_version("hr", 3) is None and store.golden.get_version("nope") is None
        assert [(r.name, r.version) for r in store.golden.list_versions()] == [
            ("hr", 2),
            ("hr", 1),
            ("legal", 1),
        ]
        assert first.counts == {"kind=follow_up": 1, "kind=single_hop": 1}


def test_a_duplicate_row_id_writes_nothing(store_url: str) -> None:
    with Store.open(store_url) as store:
        with pytest.raises(StoreError, match="same row id twice: q2"):
            store.golden.save_version("hr", [ROWS[0], ROWS[0]], {})
        assert store.golden.list_versions() == []
