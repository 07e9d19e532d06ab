"""The lexical metrics against their reference implementations: ``token_f1`` and ``exact_match`` against the
official SQuAD script's normalisation as torchmetrics implements it (``tests/squad_reference.py``; F1 within
float32's 1e-6, and v1.1's 0 where both answers normalise to nothing), ``rouge_l`` against the
rouge-score library; on hand-picked tricky pairs always, and on every real answer pair of the two answer-fit dev
sets (17,121 pairs, 9,249 rows) when ``shared/data`` is there (``tests/shared_data.py`` says where it looks)."""

from __future__ import annotations

import pytest
from rouge_score import rouge_scorer

import squad_reference as squad
from ragreplay.judges import signals
from ragreplay.metrics.lexical import (
    RougeScoreTokenizer,
    UnicodeTokenizer,
    exact_match,
    exact_match_multilingual,
    normalize_squad,
    rouge_l,
    token_f1,
    token_f1_multilingual,
)
from shared_data import ANSWER_FIT, AnswerRow, answer_rows, require_shared_data

# (candidate, reference, SQuAD v1.1 F1, SQuAD v1.1 exact match, multilingual F1, multilingual exact match)
TRICKY = [
    # ASCII punctuation is deleted, not made a space: one word, not two
    ("Fujiwara-Familie", "FujiwaraFamilie", 1.0, True, 0.0, False),
    ("36.0", "36", 0.0, False, 2 / 3, False),
    ("U.S.", "US", 1.0, True, 0.0, False),
    ("1,000", "1000", 1.0, True, 1.0, True),
    ("don't", "dont", 1.0, True, 1.0, True),
    (
        "a-b",
        "a b",
        0.0,
        False,
        1.0,
        True,
    ),  # "ab" against "b" (the article dropped); multilingual: "b" and "b"
    # Unicode punctuation is kept, as part of the word or as a word of its own
    ("«Vijfentwintig» dagen", "vijfentwintig dagen", 0.5, False, 1.0, True),
    ("per jaar — 25 dagen", "per jaar 25 dagen", 8 / 9, False, 1.0, True),
    ("don’t", "dont", 0.0, False, 1.0, True),
    ("年假。", "年假", 0.0, False, 1.0, True),
    # Dutch articles are words like any other; English ones go, as whole words only
    ("de auto", "auto", 2 / 3, False, 1.0, True),
    ("het huis", "het huis", 1.0, True, 1.0, True),
    ("een fiets", "fiets", 2 / 3, False, 1.0, True),
    ("The Hague", "hague", 1.0, True, 1.0, True),
    ("an apple", "Apple.", 1.0, True, 1.0, True),
    ("theatre", "atre", 0.0, False, 0.0, False),
    # nothing left: exact match, yet F1 0 (the script's num_same == 0)
    ("The.", "a", 0.0, True, 1.0, True),
    ("", "", 0.0, True, 1.0, True),
    ("Éclair au café", "éclair au CAFÉ", 1.0, True, 1.0, True),
    ("The 25 days.", "25 days", 1.0, True, 1.0, True),
    ("25 days", "30 days", 0.5, False, 0.5, False),
]


@pytest.mark.parametrize(("candidate", "reference", "f1", "em", "f1_ml", "em_ml"), TRICKY)
def test_tricky_pairs_score_as_the_squad_script(
    candidate: str, reference: str, f1: float, em: bool, f1_ml: float, em_ml: bool
) -> None:
    assert token_f1(candidate, reference) == pytest.approx(f1, abs=1e-15)
    if not squad.both_empty(candidate, reference):
        assert token_f1(candidate, reference) == pytest.approx(squad.f1_score(candidate, reference), abs=1e-6)
    assert exact_match(candidate, reference) is squad.exact_match_score(candidate, reference) is em
    assert normalize_squad(candidate) == squad.normalize_answer(candidate)
    assert token_f1_multilingual(candidate, reference) == pytest.approx(f1_ml, abs=1e-15)
    assert exact_match_multilingual(candidate, reference) is em_ml


def test_the_judges_normalisation_is_unchanged() -> None:
    """The local judges keep the normalisation their models were fitted on (``normalize_multilingual``)."""
    assert (
        signals.normalize_multilingual("«Vijfentwintig» dagen — per jaar…") == "vijfentwintig dagen per jaar"
    )
    assert signals.normalize_multilingual("De Fujiwara-Familie, 36.0") == "fujiwara familie 36 0"
    assert signals.token_f1_multilingual("", "") == 1.0 and token_f1("", "") == 0.0


def test_several_references_take_the_best_as_the_script_does() -> None:
    refs = ["FedExField in Landover, Maryland", "the Washington metropolitan area"]
    for candidate in ("washington metropolitan area", "Landover , Maryland", "Washington, D.C.", "nowhere"):
        expected = squad.metric_max_over_ground_truths(squad.f1_score, candidate, refs)
        assert token_f1(candidate, refs) == pytest.approx(expected, abs=1e-6)
        assert exact_match(candidate, refs) is squad.metric_max_over_ground_truths(
            squad.exact_match_score, candidate, refs
        )
    with pytest.raises(ValueError, match="token_f1 needs at least one reference"):
        token_f1("x", [])
    with pytest.raises(ValueError, match="exact_match needs"):
        exact_match("x", [])


ROUGE_TRICKY = [
    ("The cat sat on the mat today.", "the cat is on the mat"),
    ("één keer per jaar", "een keer per jaar"),  # "één" is "n" to rouge-score
    ("Café au lait, s'il vous plaît", "cafe au lait"),
    ("所有员工都有年假", "所有员工都有年假"),  # nothing left: 0.0
    ("Όλοι οι εργαζόμενοι δικαιούνται άδεια", "Όλοι δικαιούνται άδεια"),
    ("snake_case and CamelCase 3.5", "snake case camelcase 3 5"),
    ("İstanbul ﬁnance", "istanbul finance"),  # "İ" lower-cases to "i" + a combining dot; "ﬁ" is no "fi"
    ("", "x"),
]


@pytest.mark.parametrize(("candidate", "reference"), ROUGE_TRICKY)
def test_rouge_score_tokenizer_gives_rouge_scores_figure(candidate: str, reference: str) -> None:
    default = rouge_scorer.RougeScorer(["rougeL"])
    expected = default.score(reference, candidate)["rougeL"].fmeasure
    assert rouge_l(candidate, reference, tokenizer="rouge-score") == expected
    assert RougeScoreTokenizer().tokenize(candidate) == default._tokenizer.tokenize(candidate)


def test_the_default_tokenizer_keeps_what_rouge_score_drops() -> None:
    """The documented difference: the Unicode tokenizer keeps non-Latin letters, rouge-score's keeps
    ``[a-z0-9]`` only; on ASCII text they agree."""
    assert RougeScoreTokenizer().tokenize("één 所有 Όλοι ok2") == ["n", "ok2"]
    assert UnicodeTokenizer().tokenize("één 所有 Όλοι ok2") == ["één", "所", "有", "όλοι", "ok2"]
    assert rouge_l("所有员工都有年假", "所有员工都有年假") == 1.0
    assert rouge_l("所有员工都有年假", "所有员工都有年假", tokenizer="rouge-score") == 0.0
    assert (
        rouge_l("één dag", "een dag") == 0.5 and rouge_l("één dag", "een dag", tokenizer="rouge-score") == 0.5
    )
    assert rouge_l("één dag", "één dag") == 1.0
    with pytest.raises(ValueError, match="unknown tokenizer 'nltk'"):
        rouge_l("a", "a", tokenizer="nltk")  # type: ignore[arg-type]


# ---------------------------------------------------------------- every real answer pair of the dev sets


@pytest.fixture(scope="module")
def real_rows() -> list[AnswerRow]:
    rows = answer_rows(require_shared_data(*ANSWER_FIT))
    assert len(rows) >= 1000 and sum(len(r.references) for r in rows) >= 1000
    return rows


def test_squad_metrics_equal_the_reference_on_every_real_pair(real_rows: list[AnswerRow]) -> None:
    pairs = 0
    for row in real_rows:
        for reference in row.references:
            ours = token_f1(row.candidate, reference)
            if squad.both_empty(row.candidate, reference):
                assert ours == 0.0  # v1.1: no token in common (torchmetrics: v2.0's 1 for "no answer")
            else:
                assert ours == pytest.approx(squad.f1_score(row.candidate, reference), abs=1e-6), (
                    row,
                    reference,
                )
            assert exact_match(row.candidate, reference) is squad.exact_match_score(row.candidate, reference)
            assert normalize_squad(row.candidate) == squad.normalize_answer(row.candidate)
            pairs += 1
        refs = list(row.references)
        if not any(squad.both_empty(row.candidate, r) for r in refs):
            best = squad.metric_max_over_ground_truths(squad.f1_score, row.candidate, refs)
            assert token_f1(row.candidate, refs) == pytest.approx(best, abs=1e-6)
        assert exact_match(row.candidate, refs) is squad.metric_max_over_ground_truths(
            squad.exact_match_score, row.candidate, refs
        )
    assert pairs >= 1000


def test_rouge_l_with_rouge_scores_tokenizer_equals_rouge_score_on_every_real_pair(
    real_rows: list[AnswerRow],
) -> None:
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    differ_by_default = 0
    for row in real_rows:
        for reference in row.references:
            expected = scorer.score(reference, row.candidate)["rougeL"].fmeasure
            assert rouge_l(row.candidate, reference, tokenizer="rouge-score") == expected, (row, reference)
            if rouge_l(row.candidate, reference) != expected:  # only where a text is not plain ASCII
                assert not (row.candidate.isascii() and reference.isascii()), (row, reference)
                differ_by_default += 1
        expected = scorer.score_multi(list(row.references), row.candidate)["rougeL"].fmeasure
        assert rouge_l(row.candidate, row.references, tokenizer="rouge-score") == expected
    assert differ_by_default > 0


def test_the_lexical_definitions_are_part_of_an_eval_runs_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run started with the multilingual token_f1 (version 1) is not resumed with SQuAD's (version 2)."""
    from ragreplay.core.eval import EvalRow
    from ragreplay.evaluation import identity

    rows = [EvalRow(id="q1", question="q", answer="a", reference="r")]
    now = identity.config_hash(rows, None)
    assert identity.LEXICAL_VERSION == 2 and identity.run_config(1, None, 1)["lexical_version"] == 2
    monkeypatch.setattr(identity, "LEXICAL_VERSION", 1)
    assert identity.config_hash(rows, None) != now
