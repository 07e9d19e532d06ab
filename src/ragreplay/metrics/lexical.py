"""Lexical overlap between an answer and its reference(s): BLEU (sacrebleu), ROUGE-L (rouge-score's, with a
tokenizer that keeps non-Latin text; rouge-score's formula with its LCS computed bit-parallel, so the library and
its nltk and scipy are never imported), SQuAD token F1 and exact match (the judges' own normalisation).

rouge-score's default tokenizer lower-cases and keeps only ``[a-z0-9]``, so a Dutch "één" loses its letters and a
Chinese or Greek answer scores 0 against itself; :class:`UnicodeTokenizer` keeps every letter and digit, splits
scripts written without spaces (CJK, Thai) into characters, and agrees with the default on plain ASCII text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ragreplay.judges.signals import exact_match, token_f1

__all__ = [
    "UnicodeTokenizer",
    "bleu",
    "corpus_bleu",
    "exact_match",
    "lcs_length",
    "load_backends",
    "rouge_l",
    "token_f1",
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


_TOKENIZER = UnicodeTokenizer()


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


def rouge_l(candidate: str, references: str | Sequence[str]) -> float:
    """ROUGE-L F-measure of ``candidate`` against the best of ``references`` (0..1): rouge-score's, with
    :class:`UnicodeTokenizer` and a faster LCS (its results are pinned against rouge-score by the tests)."""
    refs = [references] if isinstance(references, str) else list(references)
    if not refs:
        raise ValueError("rouge_l needs at least one reference")
    tokens = _TOKENIZER.tokenize(candidate)
    return max(_rouge_l_f(tokens, _TOKENIZER.tokenize(ref)) for ref in refs)


def bleu(candidate: str, references: str | Sequence[str], tokenize: str = "13a") -> float:
    """Sentence BLEU of ``candidate`` against ``references`` on sacrebleu's 0-100 scale (``tokenize``: any
    sacrebleu tokenizer, e.g. ``intl`` for non-Latin scripts, ``zh`` for Chinese)."""
    refs = [references] if isinstance(references, str) else list(references)
    if not refs:
        raise ValueError("bleu needs at least one reference")
    return float(_sentence_bleu(tokenize).sentence_score(candidate, refs).score)


def corpus_bleu(
    candidates: Sequence[str], references: Sequence[Sequence[str]], tokenize: str = "13a"
) -> float:
    """Corpus BLEU (0-100) of ``candidates`` against one list of references per candidate (equal counts)."""
    import sacrebleu

    if not references or any(len(r) != len(references[0]) for r in references):
        raise ValueError("corpus_bleu needs the same number of references for every candidate")
    streams = [list(stream) for stream in zip(*references, strict=True)]
    return float(sacrebleu.corpus_bleu(list(candidates), streams, tokenize=tokenize).score)
