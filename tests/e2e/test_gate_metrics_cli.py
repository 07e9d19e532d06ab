"""`ragreplay gate --metrics lexical` and `gate-report --metrics lexical`: on the items with a reviewer's correct
answer, the lexical metrics of both sides against it and the paired difference, in every report but JUnit, with
no effect on the decision; a wrong family is refused naming the choices."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gates import PASSING, make_set, question, targets
from ragreplay.api import lexical_metrics
from ragreplay.core.paired_stats import compare_paired

# the challenger's answer of a wound is its question (GOOD), the champion's "zzz" (BAD)
REFERENCES = {
    question("wound", 0): question("wound", 0),  # the challenger says exactly the reviewer's answer
    question("wound", 1): "the wound policy number 1 for holidays is <script>alert(1)</script> 12 days",
    question("wound", 2): "zzz",  # the champion's answer is the reviewer's
}


def cli(store_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragreplay.cli.app", *args, "--db", store_url],
        capture_output=True,
        text=True,
        timeout=120,
    )


def gate(store_url: str, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    champion, challenger = targets(tmp_path, make_set(store_url, PASSING, REFERENCES))
    args = ["--champion", str(champion), "--challenger", str(challenger), "--judge", "fake:default"]
    return cli(store_url, "gate", *args, *extra)


def test_lexical_metrics_of_both_sides_and_their_paired_difference(tmp_path: Path, store_url: str) -> None:
    done = gate(store_url, tmp_path, "--metrics", "lexical", "--format", "json")
    assert done.returncode == 0, done.stderr  # the bars still decide: pass
    report = json.loads(done.stdout)
    found = report["reference_metrics"]
    assert (found["family"], found["with_reference"], found["paired"], found["errored"]) == (
        "lexical",
        3,
        3,
        0,
    )
    champion = [lexical_metrics("zzz", ref) for ref in REFERENCES.values()]
    challenger = [lexical_metrics(q, ref) for q, ref in REFERENCES.items()]
    metrics = {m["name"]: m for m in found["metrics"]}
    assert list(metrics) == ["bleu", "rouge_l", "token_f1", "exact_match"]
    for name, m in metrics.items():
        expected = compare_paired([c[name] for c in champion], [c[name] for c in challenger])
        assert m["n"] == 3 and m["mean_a"] == pytest.approx(expected.mean_a)
        assert m["mean_b"] == pytest.approx(expected.mean_b)
        assert m["diff"] == pytest.approx(expected.mean_diff) and m["p_value"] == pytest.approx(
            expected.p_value
        )
        assert m["low"] == pytest.approx(expected.low) and m["high"] == pytest.approx(expected.high)
    assert metrics["exact_match"]["mean_a"] == pytest.approx(1 / 3)  # "zzz" is wound 2's reference
    assert metrics["exact_match"]["mean_b"] == pytest.approx(1 / 3)  # wound 0's answer is its reference

    shown = cli(store_url, "gate-report", report["gate"]["id"], "--metrics", "lexical", "--format", "md")
    assert shown.returncode == 0, shown.stderr
    assert "### Lexical metrics against reviewers' answers" in shown.stdout
    assert "| token_f1 | 3 | 0 |" in shown.stdout and "<script>" not in shown.stdout
    text = cli(store_url, "gate-report", report["gate"]["id"], "--metrics", "lexical")
    assert "challenger - champion" in text.stdout and "3 item(s) have one, 3 paired" in text.stdout
    plain = cli(store_url, "gate-report", report["gate"]["id"], "--format", "json")
    assert json.loads(plain.stdout)["reference_metrics"] is None  # only when asked


def test_an_unknown_metric_family_is_refused_before_any_call(tmp_path: Path, store_url: str) -> None:
    done = gate(store_url, tmp_path, "--metrics", "bleu")
    assert done.returncode == 3  # the gate's "could not run"
    assert "--metrics 'bleu': choose one of lexical" in done.stderr and "Traceback" not in done.stderr
