"""The shipped local FIT judge (real embedder) on the traps of issue 14: values in the same slot, polarity in
English, Dutch and German, partial answers, answers that quote the reference, echo bots and translations; and
several references judged one by one."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from builders import make_case
from ragreplay.core.types import Answer, Case, Fit, Judgment, TokenUsage
from ragreplay.judges.local_fit import LocalFitJudge
from ragreplay.judges.references import combine, judge_references


@pytest.fixture(scope="module")
def judge() -> LocalFitJudge:
    return LocalFitJudge()


async def fit_of(
    judge: LocalFitJudge, old: str, new: str, question: str = "What does the policy say?"
) -> Judgment:
    return await judge.judge(make_case(query=question, old_answer=old), question, Answer(text=new))


NO_FIT_TRAPS = {
    "shared year, other amount": ("In 2024 you get 25 days of leave.", "In 2024 you get 30 days of leave."),
    "other amount with citation marks": (
        "The first season has 10 episodes.",
        "The first season has a total of8 episodes1.",
    ),
    "other year in a full date, other numbers shared": (
        "From 1 March 2021 you get 25 days of leave and 3 days of training.",
        "From 1 March 2022 you get 25 days of leave and 3 days of training.",
    ),
    "two people's names in the same sentence": (
        "Leave requests are approved by Anna de Vries from the planning team.",
        "Leave requests are approved by Mark Jansen from the planning team.",
    ),
    "HR vs your manager": (
        "HR approves your leave request within a week.",
        "Your manager approves your leave request within a week.",
    ),
    "HR vs manager, Dutch": (
        "HR keurt je verlofaanvraag binnen een week goed.",
        "Je leidinggevende keurt je verlofaanvraag binnen een week goed.",
    ),
    "HR vs manager, German": (
        "Die Personalabteilung genehmigt den Urlaubsantrag innerhalb einer Woche.",
        "Der Vorgesetzte genehmigt den Urlaubsantrag innerhalb einer Woche.",
    ),
    "employer and employee swapped": (
        "The employer pays the employee's travel costs for business trips.",
        "The employee pays the employer's travel costs for business trips.",
    ),
    "allowed vs forbidden": (
        "Working from home on Fridays is allowed for all staff.",
        "Working from home on Fridays is forbidden for all staff.",
    ),
    "toegestaan vs verboden": (
        "Thuiswerken op vrijdag is toegestaan voor alle medewerkers.",
        "Thuiswerken op vrijdag is verboden voor alle medewerkers.",
    ),
    "erlaubt vs verboten": (
        "Homeoffice am Freitag ist für alle Mitarbeiter erlaubt.",
        "Homeoffice am Freitag ist für alle Mitarbeiter verboten.",
    ),
    "is vs is not": ("The notice period is 20 days.", "The notice period is not 20 days."),
    "can vs cannot": (
        "You can carry over unused vacation days to next year.",
        "You cannot carry over unused vacation days to next year.",
    ),
    "mag vs mag niet": (
        "Je mag ongebruikte vakantiedagen meenemen naar volgend jaar.",
        "Je mag ongebruikte vakantiedagen niet meenemen naar volgend jaar.",
    ),
    "darf vs darf nicht": (
        "Sie dürfen ungenutzte Urlaubstage ins nächste Jahr mitnehmen.",
        "Sie dürfen ungenutzte Urlaubstage nicht ins nächste Jahr mitnehmen.",
    ),
    "a partial answer": (
        "You get 25 days of leave per year, and your manager must approve every request in advance.",
        "You get 25 days of leave per year.",
    ),
    "a wrong answer that claims to match the reference": (
        "You get 25 days of leave per year.",
        "You get 30 days of leave per year (same as the reference: 25 days of leave per year).",
    ),
}


@pytest.mark.parametrize("old, new", list(NO_FIT_TRAPS.values()), ids=list(NO_FIT_TRAPS))
async def test_traps_are_no_fit(judge: LocalFitJudge, old: str, new: str) -> None:
    judgment = await fit_of(judge, old, new)
    assert judgment.fit is Fit.NO_FIT, judgment.reason
    assert judgment.best_guess is Fit.NO_FIT


FIT_CONTROLS = {
    "the same answer with citation marks": (
        "The first season has 10 episodes.",
        "The first season has a total of10 episodes1.",
    ),
    "the same answer reworded": (
        "You get 25 days of leave per year.",
        "Each year you receive 25 days of leave.",
    ),
    "the same role, reworded": (
        "Your manager approves the request.",
        "The request is approved by your manager.",
    ),
    "the same date in another format": (
        "The new policy starts on 1 March 2022.",
        "The new policy starts on March 1, 2022.",
    ),
    "a Dutch translation sharing no word": (
        "You must submit your expense report within thirty days.",
        "Je moet je declaratie binnen dertig dagen indienen.",
    ),
}


@pytest.mark.parametrize("old, new", list(FIT_CONTROLS.values()), ids=list(FIT_CONTROLS))
async def test_controls_still_fit(judge: LocalFitJudge, old: str, new: str) -> None:
    judgment = await fit_of(judge, old, new)
    assert judgment.fit is Fit.FIT, judgment.reason


LIKED = [
    ("How many vacation days do I get?", "Full-time employees get 25 vacation days per year."),
    ("Who approves my leave request?", "Your manager approves leave requests in the HR portal."),
    (
        "Can I work from home on Fridays?",
        "Yes, working from home on Fridays is allowed with your team's consent.",
    ),
    ("How long is the notice period?", "The notice period is one month for both sides."),
    ("Hoeveel vakantiedagen krijg ik?", "Voltijdse medewerkers krijgen 25 vakantiedagen per jaar."),
    ("Wie keurt mijn verlof goed?", "Je leidinggevende keurt verlof goed via het HR-portaal."),
    ("When is the salary paid?", "Salaries are paid on the 25th of every month."),
    ("What is the mileage allowance?", "The mileage allowance is 0.23 euro per kilometre."),
]


@pytest.mark.parametrize("question, liked", LIKED)
async def test_an_echo_bot_fits_no_substantive_answer(
    judge: LocalFitJudge, question: str, liked: str
) -> None:
    for echo in (f"You asked: {question}", question, f"Je vroeg: {question}"):
        judgment = await fit_of(judge, liked, echo, question)
        assert judgment.fit is Fit.NO_FIT, (echo, judgment.reason)


# ---------------------------------------------------------------- several references, best guess


async def test_several_references_are_judged_one_by_one_and_fit_any(judge: LocalFitJudge) -> None:
    question = "who wrote the novel nineteen eighty-four"
    references = ["Eric Arthur Blair", "George Orwell", "Orwell"]
    case = make_case(query=question, old_answer=references[0])
    answer = Answer(text="Nineteen Eighty-Four was written by George Orwell.")
    judgment = await judge_references(judge, case, question, answer, references)
    assert judgment.fit is Fit.FIT and judgment.best_guess is Fit.FIT
    assert judgment.reason.startswith("reference 2 of 3:")
    assert [r["fit"] for r in json.loads(judgment.raw)["references"]][1] == "FIT"
    # Against the first reference alone it does not fit: the fit comes from the others.
    alone = await judge_references(judge, case, question, answer, references[:1])
    assert alone.fit is not Fit.FIT
    wrong = Answer(text="Nineteen Eighty-Four was written by Aldous Huxley.")
    assert (await judge_references(judge, case, question, wrong, references)).fit is Fit.NO_FIT


class CountingJudge:
    """A judge without ``judge_references``: FIT only against the reference "yes"."""

    name = "counting"
    prompt_version = "counting-1"

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def judge(self, case: Case, question: str, new_answer: Answer) -> Judgment:
        self.seen.append(case.old_answer)
        fit = Fit.FIT if case.old_answer == "yes" else Fit.NO_FIT
        return Judgment(
            fit=fit,
            judge=self.name,
            prompt_version=self.prompt_version,
            tokens=TokenUsage(input=10),
            cost_usd=0.5,
        )


async def test_any_judge_is_asked_once_per_reference() -> None:
    counting = CountingJudge()
    case = make_case(old_answer="no")
    judgment = await judge_references(counting, case, "q", Answer(text="a"), ["no", "maybe", "yes"])
    assert sorted(counting.seen) == ["maybe", "no", "yes"]
    assert judgment.fit is Fit.FIT and judgment.tokens.input == 30 and judgment.cost_usd == 1.5
    counting.seen.clear()
    none = await judge_references(counting, case, "q", Answer(text="a"), [])
    assert counting.seen == ["no"] and none.fit is Fit.NO_FIT


def _j(fit: Fit, guess: Fit | None = None) -> Judgment:
    return Judgment(fit=fit, best_guess=guess, judge="j", prompt_version="v", reason=fit.value)


@pytest.mark.parametrize(
    "fits, expected, guess",
    [
        ([_j(Fit.NO_FIT), _j(Fit.FIT)], Fit.FIT, Fit.FIT),
        ([_j(Fit.NO_FIT), _j(Fit.UNSCORABLE, Fit.FIT)], Fit.UNSCORABLE, Fit.FIT),
        ([_j(Fit.NO_FIT), _j(Fit.UNSCORABLE, Fit.NO_FIT)], Fit.UNSCORABLE, Fit.NO_FIT),
        ([_j(Fit.NO_FIT), _j(Fit.NO_FIT)], Fit.NO_FIT, Fit.NO_FIT),
    ],
)
def test_combine_fits_any(fits: Sequence[Judgment], expected: Fit, guess: Fit) -> None:
    combined = combine(fits)
    assert combined.fit is expected and combined.best_guess is guess


async def test_every_judgment_carries_a_best_guess(judge: LocalFitJudge) -> None:
    question = "What does the policy say?"
    pairs = [*NO_FIT_TRAPS.values(), *FIT_CONTROLS.values(), ("Blue.", "It is not clear from the text.")]
    for old, new in pairs:
        judgment = await fit_of(judge, old, new, question)
        assert judgment.best_guess in (Fit.FIT, Fit.NO_FIT)
        if judgment.fit is not Fit.UNSCORABLE:
            assert judgment.best_guess is judgment.fit
