"""Agreement between reviewers on the review screen, on SQLite and PostgreSQL: on queues with k >= 2 the queues
page shows each pair's Cohen's kappa and the overall Krippendorff's alpha with their n, "not enough overlap yet"
under the minimum, and only over the items the viewer has reviewed (never others' labels before one's own)."""

from __future__ import annotations

import re

from ragreplay.core.review import HumanWinner, Review, cohen_kappa, krippendorff_alpha
from ragreplay.store import Store
from review_web import app_store, client_for, login, make_item

__all__ = ["app_store"]  # the fixture, used by name

N = 12
ANN: list[HumanWinner] = ["champion", "challenger", "tie"] * 4
BOB: list[HumanWinner] = ["challenger" if i in (0, 5) else w for i, w in enumerate(ANN)]  # 10 of 12 agree
CY: list[HumanWinner] = ANN[:4]


def _review_all(store: Store, queue_id: str, reviewer: str, winners: list[HumanWinner]) -> None:
    for winner in winners:
        got = store.reviews.next_item_for(queue_id, reviewer)
        assert got is not None
        choice = "tie" if winner == "tie" else ("A" if winner == got.a_side else "B")
        store.reviews.save_review(
            queue_id,
            Review.model_validate(
                {"reviewer": reviewer, "item_key": got.item.key, "a_side": got.a_side, "choice": choice}
            ),
        )


def _section(html: str, queue_id: str) -> str:
    found = re.search(rf'<section class="agreement" id="agreement-{queue_id}".*?</section>', html, re.S)
    assert found, "no agreement section"
    return found.group(0)


def _row(section: str, pair: str) -> str:
    found = re.search(
        rf'<tr class="pair" data-pair="{re.escape(pair)}" data-n="(\d+)">.*?</tr>', section, re.S
    )
    assert found, pair
    return found.group(0)


def test_the_queues_page_shows_kappa_and_alpha_over_the_viewers_reviewed_items(
    app_store: tuple[str, Store],
) -> None:
    url, store = app_store
    tokens = {name: store.reviews.add_reviewer(name) for name in ("ann", "bob", "cy", "dan")}
    queue = store.reviews.create_queue("calibration", [make_item(f"i{n:02}") for n in range(N)], k=3)
    single = store.reviews.create_queue("calibration", [make_item("j1")], k=1)
    for name, winners in (("ann", ANN), ("bob", BOB), ("cy", CY)):
        _review_all(store, queue.id, name, winners)

    with client_for(url) as client:
        login(client, tokens["ann"])
        html = client.get("/review").text
    assert f'id="agreement-{single.id}"' not in html  # k=1: nothing overlaps
    section = _section(html, queue.id)
    assert 'data-items="12" data-enough="yes"' in section
    alpha = krippendorff_alpha(
        [[a, b] + ([c] if i < 4 else []) for i, (a, b, c) in enumerate(zip(ANN, BOB, ANN, strict=True))]
    )
    assert alpha is not None and f"alpha {alpha:.2f}" in section
    ann_bob = _row(section, "ann|bob")
    kappa = cohen_kappa(ANN, BOB)
    assert (
        kappa is not None
        and 'data-n="12"' in ann_bob
        and "10 / 12" in ann_bob
        and f"kappa {kappa:.2f}" in ann_bob
    )
    for pair in ("ann|cy", "bob|cy"):
        row = _row(section, pair)
        assert (
            'data-n="4"' in row
            and "not enough overlap yet (4 of 10)" in row
            and "kappa" not in row.split("</td>")[-2]
        )

    with client_for(url) as client:  # cy reviewed 4 items: figures over those 4 only
        login(client, tokens["cy"])
        section = _section(client.get("/review").text, queue.id)
    assert 'data-items="4" data-enough="no"' in section and "not enough overlap yet (4 of 10)" in section
    assert 'data-n="4"' in _row(section, "ann|bob") and "10 / 12" not in section

    with client_for(url) as client:
        login(client, tokens["dan"])
        section = _section(client.get("/review").text, queue.id)
    assert (
        "No overlap yet" in section
        and "ann|bob" not in section
        and "kappa" not in section.lower().split("</p>", 1)[1]
    )

    with client_for(url, min_overlap=3) as client:  # a lower bar: cy sees ann and bob on cy's four items only
        login(client, tokens["cy"])
        section = _section(client.get("/review").text, queue.id)
    restricted = cohen_kappa(ANN[:4], BOB[:4])
    assert restricted is not None and restricted != kappa
    assert f"kappa {restricted:.2f}" in _row(section, "ann|bob") and "3 / 4" in _row(section, "ann|bob")
