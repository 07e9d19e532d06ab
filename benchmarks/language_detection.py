"""The reports' language detector (py3langid, ``ragreplay.judges.language``) against the old EN/NL word rule.

Rows: the sentences of the demo's HR corpus (``src/ragreplay/demo/data/corpus``, language from the file name,
sentences of at least 2 words and 12 letters), and pairs of one English and one Dutch sentence (code-switched
text, where no language should be claimed unless one clearly dominates). Speed: the demo log's distinct assistant
answers, citations removed, each detected once per repetition. The thresholds were chosen looking at these
sentences: the figures are dev figures.

    python benchmarks/language_detection.py
"""

from __future__ import annotations

import json
import random
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from ragreplay.judges.hygiene import detect_en_nl
from ragreplay.judges.language import detect_language, in_other_language

DEMO = Path(__file__).resolve().parents[1] / "src" / "ragreplay" / "demo" / "data"
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W\d_]+")
_CITATION = re.compile(r"\[[^\]]*\]")
Detector = Callable[[str], str | None]


def corpus_sentences() -> list[tuple[str, str]]:
    """(language, sentence) of every English and Dutch corpus document's sentences long enough to judge."""
    rows: list[tuple[str, str]] = []
    for path in sorted((DEMO / "corpus").glob("*.md")):
        language = path.stem.rsplit("-", 1)[-1]
        if language not in ("en", "nl"):
            continue
        body = path.read_text(encoding="utf-8").split("---", 2)[-1]
        for sentence in _SENTENCE.split(body):
            sentence = sentence.strip(" #-*|")
            words = _WORD.findall(sentence)
            if len(words) >= 2 and sum(map(len, words)) >= 12:
                rows.append((language, sentence))
    return rows


def demo_answers() -> list[tuple[str, str]]:
    """(conversation language tag, answer without citations) of the demo log's distinct assistant turns."""
    seen: dict[str, str] = {}
    with (DEMO / "production.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            case = json.loads(line)
            for message in case["messages"]:
                if message["role"] == "ai":
                    seen.setdefault(_CITATION.sub(" ", message["content"]), case["tags"]["language"])
    return [(language, text) for text, language in seen.items()]


def score(detector: Detector, rows: list[tuple[str, str]]) -> Counter[str]:
    """right / wrong / unknown counts of ``detector`` on labelled rows."""
    counts: Counter[str] = Counter()
    for language, text in rows:
        found = detector(text)
        counts["unknown" if found is None else "right" if found == language else "wrong"] += 1
    return counts


def per_call_us(call: Callable[[str, str], object], rows: list[tuple[str, str]], reps: int = 5) -> float:
    """Microseconds per call, the fastest of ``reps`` passes over ``rows``."""
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        for language, text in rows:
            call(text, language)
        best = min(best, time.perf_counter() - start)
    return best / len(rows) * 1e6


def main() -> None:
    """Print the accuracy table and the speed figures."""
    start = time.perf_counter()
    detect_language("Loading the model takes a moment.")
    print(f"model load: {time.perf_counter() - start:.2f} s")
    sentences = corpus_sentences()
    rng = random.Random(16)
    english = [s for lang, s in sentences if lang == "en"]
    dutch = [s for lang, s in sentences if lang == "nl"]
    mixes = [("mixed", f"{rng.choice(english)} {rng.choice(dutch)}") for _ in range(300)]
    detectors: dict[str, Detector] = {
        "EN/NL word rule (before)": detect_en_nl,
        "py3langid (now)": detect_language,
    }
    print(
        f"\n| detector | sentences right | wrong | unknown (n={len(sentences)}) | EN+NL pairs unknown (n=300) |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, detector in detectors.items():
        counts, mixed = score(detector, sentences), score(detector, mixes)
        n = len(sentences)
        print(
            f"| {name} | {counts['right'] / n:.3f} | {counts['wrong'] / n:.3f} | {counts['unknown'] / n:.3f} "
            f"| {mixed['unknown'] / len(mixes):.3f} |"
        )
    answers = demo_answers()
    print(
        f"\nper call on the demo's {len(answers)} distinct answers (mean {_mean_chars(answers)} characters):"
    )
    print(f"  EN/NL word rule: {per_call_us(lambda t, _: detect_en_nl(t), answers):.0f} µs")
    print(f"  detect_language: {per_call_us(lambda t, _: detect_language(t), answers):.0f} µs")
    print(f"  in_other_language(answer, its tag): {per_call_us(in_other_language, answers):.0f} µs")


def _mean_chars(rows: list[tuple[str, str]]) -> int:
    return round(sum(len(text) for _, text in rows) / len(rows))


if __name__ == "__main__":
    main()
