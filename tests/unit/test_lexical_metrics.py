"""Lexical metrics: BLEU through sacrebleu, ROUGE-L through rouge-score with a tokenizer that keeps non-Latin
text (the same as rouge-score's own on ASCII text), token F1 and exact match (against the SQuAD script and on real
pairs: test_lexical_references.py)."""

from __future__ import annotations

import random

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from ragreplay.metrics.lexical import (
    UnicodeTokenizer,
    bleu,
    corpus_bleu,
    exact_match,
    exact_match_multilingual,
    lcs_length,
    rouge_l,
    token_f1,
    token_f1_multilingual,
)

LATIN = [
    ("The cat sat on the mat today.", "the cat is on the mat"),
    ("You get 25 days of leave per year, pro rata for part-timers.", "Part-timers get 25 days pro rata."),
    ("Ask HR before the 1st of March.", "Your manager approves it before 1 March."),
    ("no overlap at all", "something else entirely"),
]


@pytest.mark.parametrize(("candidate", "reference"), LATIN)
def test_rouge_l_agrees_with_rouge_score_on_ascii_text(candidate: str, reference: str) -> None:
    default = rouge_scorer.RougeScorer(["rougeL"]).score(reference, candidate)["rougeL"].fmeasure
    assert rouge_l(candidate, reference) == pytest.approx(default, abs=1e-12)


def test_rouge_l_is_rouge_scores_own_figure_on_random_token_soups() -> None:
    """The bit-parallel LCS gives rouge-score's exact F-measure (same tokens), repeated words and empty
    texts included."""
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=UnicodeTokenizer())
    rng = random.Random(7)
    words = ["the", "cat", "mat", "of", "één", "所", "days", "25"]
    for _ in range(2000):
        candidate = " ".join(rng.choice(words) for _ in range(rng.randint(0, 40)))
        reference = " ".join(rng.choice(words) for _ in range(rng.randint(0, 40)))
        expected = float(scorer.score(reference, candidate)["rougeL"].fmeasure)
        assert rouge_l(candidate, reference) == expected


def test_lcs_length() -> None:
    assert lcs_length(list("abcbdab"), list("bdcaba")) == 4
    assert lcs_length([], ["a"]) == 0 and lcs_length(["a", "a"], ["a"]) == 1


def test_non_latin_text_is_kept() -> None:
    default = rouge_scorer.RougeScorer(["rougeL"])
    for text in ("Όλοι οι εργαζόμενοι δικαιούνται άδεια", "所有员工都有年假", "één keer per jaar"):
        assert rouge_l(text, text) == 1.0
    assert default.score("所有员工都有年假", "所有员工都有年假")["rougeL"].fmeasure == 0.0  # why ours exists
    assert UnicodeTokenizer().tokenize("Café 所有 ok2") == ["café", "所", "有", "ok2"]
    assert 0 < rouge_l("所有员工都有年假", "员工有年假") < 1


def test_rouge_l_takes_the_best_reference() -> None:
    assert rouge_l("the cat sat", ["a dog ran", "the cat sat"]) == 1.0
    with pytest.raises(ValueError):
        rouge_l("x", [])


def test_bleu_is_sacrebleus() -> None:
    for candidate, reference in LATIN:
        expected = sacrebleu.sentence_bleu(candidate, [reference]).score
        assert bleu(candidate, reference) == pytest.approx(expected, abs=1e-9)
    candidates = [c for c, _ in LATIN]
    refs = [[r] for _, r in LATIN]
    assert corpus_bleu(candidates, refs) == pytest.approx(
        sacrebleu.corpus_bleu(candidates, [[r for _, r in LATIN]]).score, abs=1e-9
    )
    assert bleu("the cat sat on the mat", "the cat sat on the mat") == pytest.approx(100.0)


def _random_text(rng: random.Random) -> str:
    """Words that repeat (so n-grams match), digits, 13a's punctuation, entities, dashes, newlines, non-Latin."""
    pieces = ["the", "cat", "days", "25", "3.5", "1,000", "HR", "é", "所有", "άδεια", "-", ".", ",", "'", '"']
    pieces += [
        "&quot;",
        "&amp;",
        "&lt;",
        "<skipped>",
        "-\n",
        "\n",
        "a-b",
        "9-",
        "x.y",
        "(",
        ")",
        "$",
        "@",
        "/",
        "~",
    ]
    pieces += ["…", "«", "»", "—", "€", "\t", " ", ""]
    sep = ["", " ", " ", " ", "  "]
    return "".join(rng.choice(pieces) + rng.choice(sep) for _ in range(rng.randint(0, 30)))


def test_bleu_is_sacrebleus_sentence_bleu_on_random_texts() -> None:
    """bleu counts the statistics itself (and redoes the 13a tokenizer): sacrebleu's own sentence BLEU on
    thousands of random texts, one to three references, each tokenizer path."""
    rng = random.Random(15)
    fresh = {t: sacrebleu.BLEU(tokenize=t, effective_order=True) for t in ("13a", "intl", "zh", "none")}
    nonzero = 0
    for i in range(4000):
        tokenize = "13a" if i % 4 else rng.choice(["intl", "zh", "none"])
        candidate = _random_text(rng)
        references = [_random_text(rng) for _ in range(rng.choice([1, 1, 2, 3]))]
        if rng.random() < 0.3:  # a candidate close to its reference, so higher orders match too
            candidate = references[0] + rng.choice(["", " the cat.", " 25 days"])
        expected = fresh[tokenize].sentence_score(candidate, references).score
        got = bleu(candidate, references if len(references) > 1 else references[0], tokenize=tokenize)
        assert got == pytest.approx(expected, abs=1e-9), (candidate, references, tokenize)
        nonzero += expected > 0
    assert nonzero > 1000


def test_bleu_keeps_sacrebleus_type_errors() -> None:
    with pytest.raises(TypeError):
        bleu(None, "x")  # type: ignore[arg-type]


def test_token_f1_and_exact_match() -> None:
    assert token_f1("The 25 days.", "25 days") == 1.0 and exact_match("The 25 days.", "25 days")
    assert token_f1("25 days", "30 days") == 0.5 and not exact_match("25 days", "30 days")


def test_the_kept_bleu_object_scores_as_a_fresh_one() -> None:
    """bleu keeps one sacrebleu BLEU per tokenizer: repeated and interleaved calls score as a new one would."""
    pairs = [*LATIN, ("所有员工都有年假", "员工有年假"), ("Όλοι δικαιούνται άδεια", "Όλοι δικαιούνται")]
    for _ in range(3):
        for tokenize in ("13a", "intl", "zh"):
            for candidate, reference in pairs:
                fresh = sacrebleu.BLEU(tokenize=tokenize, effective_order=True)
                expected = fresh.sentence_score(candidate, [reference]).score
                assert bleu(candidate, reference, tokenize=tokenize) == pytest.approx(expected, abs=1e-12)
    assert bleu(*LATIN[0]) != bleu(*LATIN[1])  # nothing carried over from an earlier call


def test_unicode_punctuation_counts_as_punctuation_in_the_multilingual_variants() -> None:
    """Punctuation outside ASCII (quotes, dashes, CJK and Greek marks) separates words as ASCII punctuation does in
    the judges' normalisation; SQuAD v1.1's keeps it (tests/unit/test_lexical_references.py)."""
    assert exact_match_multilingual("«Vijfentwintig» dagen — per jaar…", "vijfentwintig dagen per jaar")
    assert not exact_match("«Vijfentwintig» dagen — per jaar…", "vijfentwintig dagen per jaar")
    assert exact_match_multilingual("年假。", "年假") and exact_match_multilingual("άδεια;", "άδεια")
    assert token_f1_multilingual("één·dag", "één dag") == 1.0 and token_f1("één·dag", "één dag") == 0.0
    assert not exact_match_multilingual("€25", "25")  # a currency sign is a symbol, not punctuation: kept
    assert not exact_match_multilingual("day-off", "dayoff")  # a dash between letters splits the word
    assert exact_match("day-off", "dayoff")  # SQuAD deletes it
