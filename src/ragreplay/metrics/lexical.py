"""Lexical overlap between an answer and its reference(s), each the figure of a named reference implementation:

- :func:`bleu`: sacrebleu's sentence BLEU (its statistics and 13a tokenizer redone in fewer Python steps; pinned to
  sacrebleu's figure by the tests);
- :func:`rouge_l`: rouge-score's ROUGE-L F-measure, its formula with the LCS computed bit-parallel (so the library
  and its nltk and scipy are never imported). The default tokenizer, :class:`UnicodeTokenizer`, keeps non-Latin
  text; ``tokenizer="rouge-score"`` gives rouge-score's own default tokenizer, hence its figure exactly;
- :func:`token_f1` and :func:`exact_match`: the official SQuAD v1.1 evaluation script's (``evaluate-v1.1.py``,
  run by Python 3), :func:`normalize_squad` being its ``normalize_answer``;
- :func:`token_f1_multilingual` and :func:`exact_match_multilingual`: the local judges' normalisation
  (:func:`ragreplay.judges.signals.normalize_multilingual`), no standard's: Unicode punctuation too, made a space
  rather than deleted, and Dutch articles dropped as well.

rouge-score's default tokenizer lower-cases and keeps only ``[a-z0-9]``, so a Dutch "één" loses its letters and a
Chinese or Greek answer scores 0 against itself; :class:`UnicodeTokenizer` keeps every letter and digit, splits
scripts written without spaces (CJK, Thai) into characters, and agrees with the default on plain ASCII text.

SQuAD v1.1 deletes the ASCII punctuation (Python's ``string.punctuation``) and keeps every other character, so
"Fujiwara-Familie" is "fujiwarafamilie", "36.0" is "360", and "«Vijfentwintig»" keeps its guillemets; it drops the
English articles only (whole words, ``\\b(a|an|the)\\b``), and two answers with no token left score F1 0.
docs/eval.md gives how often each variant differs from its reference on real answer pairs.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal

from ragreplay.judges import signals

__all__ = [
    "RougeScoreTokenizer",
    "UnicodeTokenizer",
    "bleu",
    "corpus_bleu",
    "exact_match",
    "exact_match_multilingual",
    "lcs_length",
    "load_backends",
    "normalize_squad",
    "rouge_l",
    "token_f1",
    "token_f1_multilingual",
]

_WORDS = re.compile(r"[^\W_]+")
_UNSPACED = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


class UnicodeTokenizer:
    """Lower-cased runs of letters and digits in any script; characters of scripts written without spaces
    are tokens of their own. Has rouge-score's tokenizer interface (``tokenize``)."""

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text``."""
        tokens: list[str] = []
        for run in _WORDS.findall(unicodedata.normalize("NFKC", text).lower()):
            if _UNSPACED.search(run):
                tokens.extend(_split_unspaced(run))
            else:
                tokens.append(run)
        return tokens


def _split_unspaced(run: str) -> list[str]:
    out: list[str] = []
    latin = ""
    for ch in run:
        if _UNSPACED.match(ch):
            if latin:
                out.append(latin)
                latin = ""
            out.append(ch)
        else:
            latin += ch
    if latin:
        out.append(latin)
    return out


@lru_cache(maxsize=8)
def _sentence_bleu(tokenize: str) -> Any:
    """One sacrebleu ``BLEU`` per tokenizer, kept: built per call it cost more than the score (and lost the
    tokenizer's own cache). Without references at construction, ``sentence_score`` keeps no state."""
    from sacrebleu.metrics.bleu import BLEU

    return BLEU(tokenize=tokenize, effective_order=True)


def load_backends() -> None:
    """Import sacrebleu now, so that the first score does not; run it off the event loop before a job that
    scores rows with a reference. (ROUGE-L needs no import: rouge-score, with nltk and scipy, is not loaded.)"""
    _sentence_bleu("13a")


_ROUGE_SCORE_DROPPED = re.compile(r"[^a-z0-9]+")


class RougeScoreTokenizer:
    """rouge-score's default tokenizer (``rouge_score.tokenize.tokenize`` without a stemmer): lower-cased, every
    character but ``[a-z0-9]`` made a space, split. Non-Latin letters are lost ("één" gives "n", Chinese gives
    nothing); :func:`rouge_l` takes it with ``tokenizer="rouge-score"``."""

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text``."""
        return _ROUGE_SCORE_DROPPED.sub(" ", text.lower()).split()


RougeTokenizerName = Literal["unicode", "rouge-score"]
"""The tokenizers :func:`rouge_l` takes by name."""

_TOKENIZERS: dict[str, UnicodeTokenizer | RougeScoreTokenizer] = {
    "unicode": UnicodeTokenizer(),
    "rouge-score": RougeScoreTokenizer(),
}


def lcs_length(first: Sequence[str], second: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists, bit-parallel (Hyyrö 2004): one big-int
    step per token of ``second`` instead of rouge-score's table of ``len(first) x len(second)`` Python steps."""
    masks: dict[str, int] = {}
    for i, token in enumerate(first):
        masks[token] = masks.get(token, 0) | (1 << i)
    full = (1 << len(first)) - 1
    row = full
    for token in second:
        matched = row & masks.get(token, 0)
        row = ((row + matched) | (row - matched)) & full
    return len(first) - row.bit_count()


def _rouge_l_f(candidate: list[str], reference: list[str]) -> float:
    """rouge-score's ROUGE-L F-measure (same formula, same float steps) of two token lists."""
    if not candidate or not reference:
        return 0.0
    common = lcs_length(reference, candidate)
    precision, recall = common / len(candidate), common / len(reference)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _references(references: str | Sequence[str], metric: str) -> list[str]:
    """``references`` as a list; ``ValueError`` naming ``metric`` when there is none."""
    refs = [references] if isinstance(references, str) else list(references)
    if not refs:
        raise ValueError(f"{metric} needs at least one reference")
    return refs


def rouge_l(
    candidate: str, references: str | Sequence[str], tokenizer: RougeTokenizerName = "unicode"
) -> float:
    """ROUGE-L F-measure of ``candidate`` against the best of ``references`` (0..1): rouge-score's formula, with
    a faster LCS (its results are pinned against rouge-score by the tests).

    ``tokenizer``: ``"unicode"`` (:class:`UnicodeTokenizer`, the default: rouge-score's figure on ASCII text, and
    non-Latin letters kept where rouge-score drops them) or ``"rouge-score"`` (:class:`RougeScoreTokenizer`:
    ``rouge_score.rouge_scorer.RougeScorer(["rougeL"])``'s figure on any text).
    """
    refs = _references(references, "rouge_l")
    split = _TOKENIZERS.get(tokenizer)
    if split is None:
        raise ValueError(f"rouge_l: unknown tokenizer {tokenizer!r} (known: {', '.join(_TOKENIZERS)})")
    tokens = split.tokenize(candidate)
    return max(_rouge_l_f(tokens, split.tokenize(ref)) for ref in refs)


_SQUAD_PUNCTUATION = str.maketrans("", "", string.punctuation)
_SQUAD_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_squad(text: str) -> str:
    """The official SQuAD v1.1 script's ``normalize_answer``, step for step: lower-cased, every character of
    Python's ``string.punctuation`` (ASCII only) deleted, the English articles a, an, the removed as whole words,
    whitespace collapsed. Unicode punctuation ("«", "—") is kept, and "Fujiwara-Familie" is "fujiwarafamilie"."""
    text = _SQUAD_ARTICLES.sub(" ", text.lower().translate(_SQUAD_PUNCTUATION))
    return " ".join(text.split())


def _squad_f1(prediction: list[str], ground_truth: list[str]) -> float:
    """SQuAD v1.1's ``f1_score`` of two token lists, its steps and float operations in its order."""
    common = Counter(prediction) & Counter(ground_truth)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = 1.0 * num_same / len(prediction)
    recall = 1.0 * num_same / len(ground_truth)
    return (2 * precision * recall) / (precision + recall)


def token_f1(candidate: str, references: str | Sequence[str]) -> float:
    """SQuAD v1.1's token F1 of ``candidate`` against the best of ``references`` (0..1): the official script's
    ``f1_score`` over :func:`normalize_squad`'s tokens (counted with repeats), its maximum over the ground truths.

    As in the script, a side with no token left (an empty answer, or one of articles and punctuation only) scores
    0.0, even against another such side.
    """
    prediction = normalize_squad(candidate).split()
    return max(_squad_f1(prediction, normalize_squad(r).split()) for r in _references(references, "token_f1"))


def exact_match(candidate: str, references: str | Sequence[str]) -> bool:
    """SQuAD v1.1's exact match: whether ``candidate`` equals one of ``references`` after
    :func:`normalize_squad`."""
    prediction = normalize_squad(candidate)
    return any(prediction == normalize_squad(r) for r in _references(references, "exact_match"))


def token_f1_multilingual(candidate: str, references: str | Sequence[str]) -> float:
    """Token F1 over the local judges' normalisation (:func:`ragreplay.judges.signals.normalize_multilingual`:
    Unicode punctuation made a space, English and Dutch articles dropped) against the best of ``references``;
    ``ragreplay eval``'s ``token_f1`` before it became SQuAD v1.1's. Not a standard's figure: two answers with no
    token left score 1.0."""
    refs = _references(references, "token_f1_multilingual")
    return max(signals.token_f1_multilingual(candidate, r) for r in refs)


def exact_match_multilingual(candidate: str, references: str | Sequence[str]) -> bool:
    """Whether ``candidate`` equals one of ``references`` after the local judges' normalisation
    (:func:`ragreplay.judges.signals.normalize_multilingual`); ``ragreplay eval``'s ``exact_match`` before it
    became SQuAD v1.1's."""
    refs = _references(references, "exact_match_multilingual")
    return any(signals.exact_match_multilingual(candidate, r) for r in refs)


# sacrebleu's 13a tokenizer (tokenizers/tokenizer_13a.py and tokenizer_re.py): its first rule puts spaces around
# each character of one class, which a translate table does in one C call; the other three keep their regexes,
# with a callable instead of a group template (the same text, without the template's per-match Python step).
_13A_SPACED = str.maketrans({c: f" {c} " for c in "{|}~[\\]^_`" + ' !"#$%&' + "()*+" + ":;<=>?@" + "/"})
_13A_RULES = (
    (re.compile(r"([^0-9])([\.,])"), lambda m: f"{m.group(1)} {m.group(2)} "),
    (re.compile(r"([\.,])([^0-9])"), lambda m: f" {m.group(1)} {m.group(2)}"),
    (re.compile(r"([0-9])(-)"), lambda m: f"{m.group(1)} {m.group(2)} "),
)
_BLEU_ORDER = 4


def _tokens_13a(line: str) -> list[str]:
    """The tokens of sacrebleu's ``Tokenizer13a`` (what its ``BLEU`` scores), split."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    line = f" {line} ".translate(_13A_SPACED)
    for pattern, repl in _13A_RULES:
        line = pattern.sub(repl, line)
    return line.split()


def _ngram_counts(tokens: list[str]) -> list[Counter[tuple[str, ...]]]:
    """The 1- to 4-gram counts of ``tokens``, one Counter per order (sacrebleu's n-grams, as tuples)."""
    return [Counter(zip(*(tokens[k:] for k in range(n)), strict=False)) for n in range(1, _BLEU_ORDER + 1)]


def _sentence_bleu_score(hypothesis: list[str], references: list[list[str]]) -> float:
    """sacrebleu's sentence BLEU (exp smoothing, effective order) of token lists, its steps in its order."""
    ref_counts = _ngram_counts(references[0])
    for other in references[1:]:  # a reference n-gram counts as often as in the reference with most of it
        for order, counts in zip(ref_counts, _ngram_counts(other), strict=True):
            for gram, count in counts.items():
                if count > order[gram]:
                    order[gram] = count
    sys_len = len(hypothesis)
    ref_len, closest = -1, -1
    for length in (len(r) for r in references):  # the closest reference length, the shorter on a tie
        diff = abs(sys_len - length)
        if closest == -1 or diff < closest:
            closest, ref_len = diff, length
        elif diff == closest and length < ref_len:
            ref_len = length
    correct, total = [0] * _BLEU_ORDER, [0] * _BLEU_ORDER
    for n, (hyp, ref) in enumerate(zip(_ngram_counts(hypothesis), ref_counts, strict=True)):
        total[n] = max(sys_len - n, 0)  # the hypothesis's (n+1)-grams
        common = list(
            hyp.keys() & ref.keys()
        )  # each matched n-gram counts at most as often as in the reference
        correct[n] = sum(map(min, map(hyp.__getitem__, common), map(ref.__getitem__, common)))
    if not any(correct):
        return 0.0
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    precisions = [0.0] * _BLEU_ORDER
    smooth, eff_order = 1.0, _BLEU_ORDER
    for n in range(1, _BLEU_ORDER + 1):
        if total[n - 1] == 0:
            break
        eff_order = n
        if correct[n - 1] == 0:
            smooth *= 2
            precisions[n - 1] = 100.0 / (smooth * total[n - 1])
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    logs = [math.log(p) if p != 0.0 else -9999999999 for p in precisions[:eff_order]]
    return bp * math.exp(sum(logs) / eff_order)


def bleu(candidate: str, references: str | Sequence[str], tokenize: str = "13a") -> float:
    """Sentence BLEU of ``candidate`` against ``references`` on sacrebleu's 0-100 scale (``tokenize``: any
    sacrebleu tokenizer, e.g. ``intl`` for non-Latin scripts, ``zh`` for Chinese): sacrebleu's figure, its
    statistics counted here (and its default 13a tokenizer redone) rather than through its objects."""
    refs = [references] if isinstance(references, str) else list(references)
    if not refs:
        raise ValueError("bleu needs at least one reference")
    if not isinstance(candidate, str) or not all(isinstance(r, str) for r in refs):
        return float(_sentence_bleu(tokenize).sentence_score(candidate, refs).score)  # sacrebleu's own errors
    if tokenize == "13a":
        split = _tokens_13a
    else:
        tokenizer = _sentence_bleu(tokenize).tokenizer

        def split(line: str) -> list[str]:
            return str(tokenizer(line)).split()

    return _sentence_bleu_score(split(candidate.rstrip()), [split(r.rstrip()) for r in refs])


def corpus_bleu(
    candidates: Sequence[str], references: Sequence[Sequence[str]], tokenize: str = "13a"
) -> float:
    """Corpus BLEU (0-100) of ``candidates`` against one list of references per candidate (equal counts)."""
    import sacrebleu

    if not references or any(len(r) != len(references[0]) for r in references):
        raise ValueError("corpus_bleu needs the same number of references for every candidate")
    streams = [list(stream) for stream in zip(*references, strict=True)]
    return float(sacrebleu.corpus_bleu(list(candidates), streams, tokenize=tokenize).score)
