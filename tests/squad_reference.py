"""THE REFERENCE: the official SQuAD v1.1 evaluation script's scoring functions, transcribed literally.

Source: "evaluate-v1.1.py", the "Official evaluation script for v1.1 of the SQuAD dataset", linked from
https://rajpurkar.github.io/SQuAD-explorer/ (repository rajpurkar/SQuAD-explorer, MIT License, Copyright (c) 2020
Pranav Rajpurkar; the permission notice is below). Only ``normalize_answer``, ``f1_score``, ``exact_match_score``
and ``metric_max_over_ground_truths`` are taken, unchanged (the formatter and linter are kept off them); the
script's file reading and printing are left out. It runs under Python 3 here, as it does in ``evaluate``.

No maintained PyPI package ships this code without heavy dependencies: ``evaluate``'s squad metric loads it from
the Hugging Face hub at run time, ``torchmetrics`` and ``transformers`` need torch, and ``qa-metrics`` changes it
(Unicode punctuation, lemmas, sets of words). So the tests and ``benchmarks/metric_references.py`` compare
``ragreplay.metrics.lexical`` with this copy, kept apart from the code under test and never edited to fit it.

    Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated
    documentation files (the "Software"), to deal in the Software without restriction, including without
    limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the
    Software, and to permit persons to whom the Software is furnished to do so, subject to the following
    conditions:

    The above copyright notice and this permission notice shall be included in all copies or substantial portions
    of the Software.

    THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED
    TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL
    THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF
    CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER
    DEALINGS IN THE SOFTWARE.
"""

# ruff: noqa
# fmt: off
from collections import Counter
import string
import re


def normalize_answer(s):
    """Lower text and remove punctuation, articles and extra whitespace."""
    def remove_articles(text):
        return re.sub(r'\b(a|an|the)\b', ' ', text)

    def white_space_fix(text):
        return ' '.join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return ''.join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def f1_score(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def exact_match_score(prediction, ground_truth):
    return (normalize_answer(prediction) == normalize_answer(ground_truth))


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    scores_for_ground_truths = []
    for ground_truth in ground_truths:
        score = metric_fn(prediction, ground_truth)
        scores_for_ground_truths.append(score)
    return max(scores_for_ground_truths)
