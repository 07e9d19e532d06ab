"""diagnosis/facts and the coverage classification: numbers normalised, names and numbers weighing more,
facts split at sentences and semicolons, held shares, and the documented thresholds."""

from __future__ import annotations

import pytest

from ragreplay.diagnosis.coverage import classify
from ragreplay.diagnosis.facts import (
    NAME_WEIGHT,
    NUMBER_WEIGHT,
    fact_of,
    held_share,
    holds_numbers,
    key_facts,
    normal_number,
    terms_in,
)


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("50,000", "50000"),
        ("50.000", "50000"),
        ("2,45", "2.45"),
        ("2.45", "2.45"),
        ("2025-01-01", "2025-01-01"),
    ],
)
def test_numbers_are_normalised(raw: str, normal: str) -> None:
    assert normal_number(raw) == normal


def test_numbers_and_names_weigh_more() -> None:
    fact = fact_of("The bonus is paid in April with 10% extra.")
    assert fact is not None
    assert fact.weights["10"] == NUMBER_WEIGHT
    assert fact.weights["april"] == NAME_WEIGHT
    assert fact.weights["bonu"] == 1.0  # "bonus" folded like any word over four letters ending in s
    assert fact.numbers == {"10"}


def test_key_facts_split_sentences_and_clauses_and_skip_empty_ones() -> None:
    facts, left_out = key_facts("# Title\n\nThe office opens at 9; it closes at 17. It is. And then?")
    assert [f.text for f in facts] == ["The office opens at 9", "it closes at 17."]
    assert left_out == 0
    many, more = key_facts(" ".join(f"Fact number {i}." for i in range(40)), limit=30)
    assert len(many) == 30 and more == 10


def test_held_share_and_numbers() -> None:
    fact = fact_of("Employees get €650 in Rotterdam.")
    assert fact is not None
    chunk = terms_in("Warehouse employees receive a team bonus of **€650** in Rotterdam")
    assert held_share(fact, chunk) == 1.0 and holds_numbers(fact, chunk)
    other = terms_in("Employees receive a team bonus of €550 in Rotterdam")
    assert held_share(fact, other) < 1.0 and not holds_numbers(fact, other)


def test_classify_thresholds() -> None:
    assert classify(0.7, 0.0) == "covered"
    assert classify(0.69, 0.9) == "partly"
    assert classify(0.29, 0.49) == "missing"
    assert classify(0.29, 0.5) == "partly"  # nothing states the facts, but a chunk says something close
    assert classify(0.3, 0.1) == "partly"
