"""The local FIT judge: its signals (EN and NL), the three-way decision and the shipped model (its fitting
script: tests/benchmarks/test_fit_local_benchmark.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from builders import make_case
from ragreplay.core.types import Answer, Case, Fit
from ragreplay.errors import ConfigError
from ragreplay.judges import signals as sig
from ragreplay.judges.local_fit import (
    DEFAULT_RULES,
    BatchingEncoder,
    LocalFitJudge,
    LocalFitModel,
    load_model,
)

# ---------------------------------------------------------------- signals


def test_normalize_multilingual_drops_case_punctuation_and_english_and_dutch_articles() -> None:
    assert sig.normalize_multilingual("The  Hague!") == "hague"
    assert sig.normalize_multilingual("De auto, het huis en een fiets.") == "auto huis en fiets"
    assert (
        sig.normalize_multilingual("1,000 euros") == sig.normalize_multilingual("1000 euros") == "1000 euros"
    )
    assert sig.exact_match_multilingual("An apple.", "apple") and not sig.exact_match_multilingual(
        "apple", "apples"
    )


def test_token_f1_and_containment() -> None:
    assert sig.token_f1_multilingual("Lisa Jansen", "lisa jansen.") == 1.0
    assert sig.token_f1_multilingual("a b", "c d") == 0.0
    assert sig.token_f1_multilingual("lisa age", "lisa age now") == pytest.approx(0.8)
    assert sig.token_f1_multilingual("", "") == 1.0 and sig.token_f1_multilingual("x", "") == 0.0
    assert (
        sig.token_f1_multilingual("how old is lisa 30", "lisa is 30", ignore={"how", "old", "is", "lisa"})
        == 1.0
    )
    assert sig.containment("25 days", "You get 25 days a year") == 1.0
    assert sig.containment("You get 25 days a year", "25 days") == pytest.approx(2 / 5)


def test_numbers_are_canonical_across_separators_and_number_words() -> None:
    assert sig.numbers("1,000 euros") == sig.numbers("1000 euros") == sig.numbers("1.000 euro") == {"1000"}
    assert sig.numbers("3,5 uur") == sig.numbers("3.5 hours") == {"3.5"}
    assert sig.numbers("five days") == sig.numbers("vijf dagen") == sig.numbers("5 days") == {"5"}
    assert sig.numbers("twintig dagen") == {"20"}
    # Plain "een" is the Dutch article; "één" is the number.
    assert sig.numbers("een dag") == set() and sig.numbers("één dag") == {"1"}
    assert sig.numbers("no one knows") == set()
    assert sig.numbers_missing("25 days", "30 days") == 1.0
    assert sig.numbers_missing("25 days", "twenty-five days or 25 days") == 0.0


def test_dates_in_english_and_dutch_and_their_mismatch() -> None:
    expected = {"y2020", "m03", "m03d05"}
    assert sig.dates("5 March 2020") == sig.dates("March 5, 2020") == expected
    assert sig.dates("5 maart 2020") == sig.dates("2020-03-05") == expected
    assert sig.dates("You may apply at any time") == set()  # "may" alone is a verb
    assert sig.dates("in May 2021") == {"y2021", "m05"}
    assert sig.date_mismatch("1990", "from 1990 to 1995") == 0.0
    assert sig.date_mismatch("2011", "July 2018") == 1.0
    assert sig.date_mismatch("1 april", "1 mei") == 1.0
    assert sig.date_mismatch("2011", "no date here") == 0.0


def test_negation_in_english_and_dutch() -> None:
    assert sig.has_negation("You don't need approval") and sig.has_negation("You cannot carry it over")
    assert sig.has_negation("Je hebt geen toestemming nodig") and sig.has_negation("Dat mag niet")
    assert not sig.has_negation("Yes, you can carry over five days")
    assert sig.negation_mismatch("Je mag dagen meenemen.", "Je mag nooit dagen meenemen.")
    assert not sig.negation_mismatch("You may not.", "Dat mag niet.")


def test_entities_skip_common_sentence_openers() -> None:
    assert sig.entities("Utrecht") == {"utrecht"}
    assert sig.entities("You should contact Lisa in HR. The Amsterdam office closes.") == {
        "lisa",
        "hr",
        "amsterdam",
    }
    assert sig.entities("Je kunt het vragen aan Pieter.") == {"pieter"}
    assert sig.entities_missing("Ask Lisa", "ask lisa today") == 0.0
    assert sig.entities_missing("You should ask Lisa", "You should ask Mark") == 1.0


@pytest.mark.parametrize(
    "text",
    [
        "I don't know.",
        "I'm not sure about that.",
        "I could not find this in the documents.",
        "There is no information about parking in the policy.",
        "Ik weet het niet.",
        "Ik kan dit niet vinden in het beleid.",
        "Ik heb geen informatie over parkeren.",
        "   ",
    ],
)
def test_refusals_are_detected(text: str) -> None:
    assert sig.is_refusal(text)


@pytest.mark.parametrize(
    "text",
    ["You get 25 days a year.", "No, you cannot carry leave over.", "Je krijgt geen bonus.", "Ask HR."],
)
def test_answers_are_not_refusals(text: str) -> None:
    assert not sig.is_refusal(text)


def test_question_overlap_length_ratio_and_char_overlap() -> None:
    assert sig.question_overlap("Who is Lisa?", "Lisa is") == 1.0
    assert sig.question_overlap("Who is Lisa?", "the HR manager") == 0.0
    assert sig.length_ratio("one two", "one two three four") == 0.5
    assert sig.char_overlap("vakantiedagen", "vakantie dagen") > 0.8
    assert sig.char_overlap("abc", "xyz") == 0.0


class FakeEmbedder:
    """Deterministic unit vectors from a hash of the text; records each batch it is asked to encode."""

    name = "use"

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        rows = [
            np.random.default_rng(sum(map(ord, sig.normalize_multilingual(t)))).normal(size=8) for t in texts
        ]
        vectors = np.array(rows)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_embedding_cosine_encodes_both_answers_in_one_batch() -> None:
    fake = FakeEmbedder()
    assert sig.embedding_cosine(fake, "same", "same") == pytest.approx(1.0)
    assert fake.batches == [["same", "same"]]


def test_compute_signals_is_symmetric_and_complete() -> None:
    q, a, b = "How many days?", "You get 25 days, says Lisa.", "Je krijgt 30 dagen. I don't know."
    one, other = sig.compute_signals(q, a, b, 0.4), sig.compute_signals(q, b, a, 0.4)
    assert one == other
    assert tuple(one) == sig.SIGNAL_NAMES
    assert one["number_conflict"] == 1.0 and one["refusal_mismatch"] == 1.0


# ---------------------------------------------------------------- the decision


def write_model(path: Path, **changes: Any) -> Path:
    """A one-feature model: p = sigmoid(20 * (token_f1 - 0.5)), FIT at p >= 0.7, NO_FIT at p <= 0.3."""
    data: dict[str, Any] = {
        "format": "ragreplay-local-fit/2",
        "embedder": "use",
        "features": ["token_f1"],
        "mean": [0.5],
        "scale": [0.1],
        "coef": [2.0],
        "intercept": 0.0,
        "lo": 0.3,
        "hi": 0.7,
        "rules": [],
    }
    data.update(changes)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def case(old: str, query: str = "How many vacation days do I get?") -> Case:
    return make_case(query=query, old_answer=old)


async def test_three_way_decision_with_a_constructed_model(tmp_path: Path) -> None:
    judge = LocalFitJudge(embedder=FakeEmbedder(), model_path=write_model(tmp_path / "m.json"))
    assert judge.name == "local:fit" and judge.prompt_version.startswith("local-fit-2.")
    q = "How many vacation days do I get?"
    fit = await judge.judge(case("alpha beta gamma delta"), q, Answer(text="alpha beta gamma delta"))
    assert fit.fit is Fit.FIT and "word overlap F1 1.00" in fit.reason and fit.judge == "local:fit"
    assert json.loads(fit.raw)["signals"]["token_f1"] == 1.0
    unsure = await judge.judge(case("alpha beta gamma delta"), q, Answer(text="alpha beta omega sigma"))
    assert unsure.fit is Fit.UNSCORABLE and unsure.reason.startswith("signals disagree (p=0.50)")
    assert unsure.best_guess is Fit.FIT and fit.best_guess is Fit.FIT  # p = 0.5 leans FIT
    no = await judge.judge(case("alpha beta gamma delta"), q, Answer(text="omega sigma tau rho"))
    assert no.fit is Fit.NO_FIT and "word overlap F1 0.00" in no.reason and no.best_guess is Fit.NO_FIT
    empty = await judge.judge(case("alpha beta"), q, Answer(text=""))
    assert empty.fit is Fit.NO_FIT and "empty" in empty.reason


async def test_rules_override_the_regression(tmp_path: Path) -> None:
    rules = [r.to_dict() for r in DEFAULT_RULES]
    judge = LocalFitJudge(embedder=FakeEmbedder(), model_path=write_model(tmp_path / "m.json", rules=rules))
    q = "How many vacation days do I get?"
    numbers = await judge.judge(
        case("you get 25 paid days each year"), q, Answer(text="you get 30 paid days each year")
    )
    assert numbers.fit is Fit.NO_FIT and "rule" in numbers.reason and "old 25; new 30" in numbers.reason
    assert numbers.best_guess is Fit.NO_FIT  # the rule decides the best guess too
    negated = await judge.judge(case("you can carry days over"), q, Answer(text="you cannot carry days over"))
    assert negated.fit is Fit.NO_FIT and "opposite polarity" in negated.reason
    both = await judge.judge(case("I don't know."), q, Answer(text="Ik weet het niet."))
    assert both.fit is Fit.FIT and "both decline" in both.reason


def test_prompt_version_follows_the_model_content(tmp_path: Path) -> None:
    first = LocalFitJudge(FakeEmbedder(), write_model(tmp_path / "a.json")).prompt_version
    same = LocalFitJudge(FakeEmbedder(), write_model(tmp_path / "b.json")).prompt_version
    other = LocalFitJudge(FakeEmbedder(), write_model(tmp_path / "c.json", hi=0.8)).prompt_version
    assert first == same != other


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"format": "v0"}, "field 'format'"),
        ({"features": ["no_such_signal"]}, "unknown signals"),
        ({"coef": [1.0, 2.0]}, "one number per feature"),
        ({"lo": 0.8, "hi": 0.2}, "lo <= hi"),
        ({"scale": [0.0]}, "'scale' must be positive"),
        ({"rules": [{"signal": "cosine"}]}, "field 'rules'"),
    ],
)
def test_malformed_model_files_raise_config_errors(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_model(write_model(tmp_path / "m.json", **changes))


def test_missing_field_unreadable_file_and_wrong_embedder(tmp_path: Path) -> None:
    data = json.loads(write_model(tmp_path / "m.json").read_text())
    del data["coef"]
    (tmp_path / "m.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="field 'coef' is missing"):
        load_model(tmp_path / "m.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"bad\.json:1: not valid JSON"):
        load_model(tmp_path / "bad.json")
    with pytest.raises(ConfigError, match="not found"):
        load_model(tmp_path / "absent.json")
    other = FakeEmbedder()
    other.name = "e5"
    with pytest.raises(ConfigError, match="fitted with the 'use' embedder"):
        LocalFitJudge(embedder=other, model_path=write_model(tmp_path / "ok.json"))


def test_model_round_trips_through_json(tmp_path: Path) -> None:
    model, _ = load_model(write_model(tmp_path / "m.json", rules=[r.to_dict() for r in DEFAULT_RULES]))
    again = LocalFitModel.from_dict(json.loads(json.dumps(model.to_dict())))
    assert again.to_dict() == model.to_dict() and again.rules == DEFAULT_RULES


async def test_concurrent_encodes_share_one_model_call_and_get_their_own_rows() -> None:
    fake = FakeEmbedder()
    batcher = BatchingEncoder(fake, max_texts=6)
    requests = [[f"text {i}", f"other {i}"] for i in range(5)]
    results = await asyncio.gather(*(batcher.encode(r) for r in requests))
    assert [len(b) for b in fake.batches] == [6, 4]  # five concurrent pairs, at most six texts a call
    for request, rows in zip(requests, results, strict=True):
        np.testing.assert_allclose(rows, FakeEmbedder().encode(request))
    alone = await batcher.encode(["late"])
    assert fake.batches[-1] == ["late"] and alone.shape[0] == 1


async def test_an_embedder_error_reaches_every_waiting_caller() -> None:
    class Broken:
        def encode(self, texts: Sequence[str]) -> np.ndarray:
            raise RuntimeError("model file damaged")

    batcher = BatchingEncoder(Broken())
    outcomes = await asyncio.gather(batcher.encode(["a"]), batcher.encode(["b"]), return_exceptions=True)
    assert all(isinstance(o, RuntimeError) and "damaged" in str(o) for o in outcomes)


# ---------------------------------------------------------------- the shipped model, real embedder


async def test_shipped_model_decides_obvious_cases_with_the_real_embedder() -> None:
    judge = LocalFitJudge()
    q = "How many vacation days do full-time employees get?"
    old = "Full-time employees get 25 vacation days per year."
    same = await judge.judge(case(old, q), q, Answer(text=old))
    assert same.fit is Fit.FIT
    assert (await judge.judge(case("25 days", q), q, Answer(text="30 days"))).fit is Fit.NO_FIT
    changed = old.replace("25", "30")
    assert (await judge.judge(case(old, q), q, Answer(text=changed))).fit is Fit.NO_FIT
    refusal = await judge.judge(case(old, q), q, Answer(text="I could not find this in the documents."))
    assert refusal.fit is Fit.NO_FIT
    nl_q = "Hoeveel vakantiedagen krijg ik?"
    nl_old = "Voltijdse medewerkers krijgen 25 vakantiedagen per jaar."
    assert (await judge.judge(case(nl_old, nl_q), nl_q, Answer(text="Ik weet het niet."))).fit is Fit.NO_FIT
    assert (await judge.judge(case(nl_old, nl_q), nl_q, Answer(text=nl_old))).fit is Fit.FIT
