"""Popularity bias of a reward (the paper's ethics note: union rewards may favour head items).

Pure functions over grounded groups. An item's popularity is the number of requests whose union
names it; items are split into ten deciles of equal size, most popular first. For each reward:

- **recall per decile**: of the items the reward pays for, the share the lists contain. Union:
  every union item of a request once. Responder: every (responder j, item in S_j) pair, the
  expectation over which responder is drawn, so an item counts c_i times.
- **top-decile reward share**: of what the lists earn (one per hit, rank discounts left out),
  the share earned on the top 10% of items. Union: each hit on a union item earns 1; responder:
  a hit on item i earns c_i / n_x, its expected 0/1 reward over the drawn responder.

Where no item is named by two requests (ProtoQA's per-question answer clusters) popularity says
nothing: the lists are empty and the shares NaN.

>>> from remark_data.rewards import RequestLabels
>>> from remark_data.diagnose.variance import RequestGroup
>>> a = RequestGroup("x", RequestLabels.from_sets([{"hit", "miss"}, {"hit"}]), [["hit", None]])
>>> b = RequestGroup("y", RequestLabels.from_sets([{"hit"}, {"rare"}]), [["rare", "hit"]])
>>> report = popularity_bias([a, b], deciles=2)  # popularity: hit 2, miss 1, rare 1
>>> report["recall_by_decile_union"], report["recall_by_decile_responder"]
([0.6667, 1.0], [0.75, 1.0])
>>> report["top_decile_reward_share_union"], report["top_decile_reward_share_responder"]
(0.6667, 0.75)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from remark_data.diagnose.variance import RequestGroup

DECILES = 10


def item_popularity(unions: Iterable[Iterable[str]]) -> dict[str, int]:
    """Item -> number of requests whose union names it."""
    counts: dict[str, int] = {}
    for union in unions:
        for item in set(union):
            counts[item] = counts.get(item, 0) + 1
    return counts


def popularity_deciles(popularity: dict[str, int], *, deciles: int = DECILES) -> dict[str, int]:
    """Item -> decile (0 = most popular), equal-size bins of items ordered by popularity (ties
    by item id, so the split is reproducible)."""
    ordered = sorted(popularity, key=lambda item: (-popularity[item], item))
    return {item: position * deciles // len(ordered) for position, item in enumerate(ordered)}


def _share(part: float, whole: float) -> float:
    return round(part / whole, 4) if whole else 0.0


def popularity_bias(
    groups: Sequence[RequestGroup],
    *,
    popularity: dict[str, int] | None = None,
    deciles: int = DECILES,
) -> dict[str, list[float] | float]:
    """Recall per popularity decile and the reward share of the top decile, under union and
    responder rewards, for the lists of `groups`; `popularity` defaults to the groups' own
    (pass the whole split's, `item_popularity`, when only some requests have lists)."""
    if popularity is None:
        popularity = item_popularity(g.labels.union for g in groups)
    if max(popularity.values(), default=0) < 2:  # no item named twice (ProtoQA's clusters)
        return {f"{m}_{kind}": v for kind in ("union", "responder") for m, v in
                (("recall_by_decile", []), ("top_decile_reward_share", float("nan")))}  # fmt: skip
    decile = popularity_deciles(popularity, deciles=deciles)
    wanted = {"union": [0.0] * deciles, "responder": [0.0] * deciles}
    found = {"union": [0.0] * deciles, "responder": [0.0] * deciles}
    earned = {"union": [0.0, 0.0], "responder": [0.0, 0.0]}  # [top decile, all]
    for group in groups:
        labels = group.labels
        counts = {i: sum(i in s for s in labels.responders) for i in labels.union}
        n = max(len(labels.responders), 1)
        for items in group.lists:
            listed = {i for i in items if i is not None and i not in labels.seen}
            for item in labels.union - labels.seen:
                d, hit = decile[item], item in listed
                for kind, weight in (("union", 1.0), ("responder", float(counts[item]))):
                    wanted[kind][d] += weight
                    found[kind][d] += weight * hit
                if hit:
                    for kind, pay in (("union", 1.0), ("responder", counts[item] / n)):
                        earned[kind][1] += pay
                        earned[kind][0] += pay * (d == 0)
    report: dict[str, list[float] | float] = {}
    for kind in ("union", "responder"):
        report[f"recall_by_decile_{kind}"] = [
            _share(f, w) for f, w in zip(found[kind], wanted[kind], strict=True)
        ]
        report[f"top_decile_reward_share_{kind}"] = _share(*earned[kind])
    return report
