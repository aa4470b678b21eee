"""The first-page reorder's weights, fitted leaving one LoCoMo dev conversation out at a time.

    .venv/bin/python bench/recall_page_fit.py                # current weights vs refitted
    .venv/bin/python bench/recall_page_fit.py --workdir DIR  # keep (and reuse) the import

`RankConfig.page_weights` and `page_own_words` score each of the first ten hits by its fused
score (relative to the best), its similarity by meaning, that of the turns around it and
that of its windows, and how its own words match (`ranking._first_page`). This bench imports the dev slice as
recall_locomo.py does, records those features for every question's first page, then for
each conversation fits the weights on the other four (pairwise logistic regression: an
evidence turn should outscore each other turn of its page) and scores the held-out one. A
feature set is worth keeping when it helps every held-out conversation, not the total.

The own-words feature is `Searcher.own_words` of the page's hits, relative to the page's
best.

The window feature is the similarity of the question to each hit's stored window
(`hermes.recall.windows`: the turn written after the two turns before it); the row "without
windows" leaves it out, to see what it buys.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_locomo import CATEGORIES, Question, conversation_files, questions_of, run  # noqa: E402

Place = tuple[str, int]
CURRENT = (
    "fused",
    "meaning",
    "before",
    "after",
    "before2",
    "after2",
    "window",
    "own words",
)
WINDOWS = ("window",)


@dataclass
class Page:
    places: list[Place]
    features: dict[str, list[float]] = field(default_factory=dict)  # name -> one per place


def capture(home: Path, questions: list[Question]) -> dict[int, Page]:
    """Each question's first page (before the reorder) and its features."""
    os.environ["HERMES_HOME"] = str(home)
    os.environ["HERMES_EMBEDDINGS"] = "on"
    from hermes.config.settings import load_settings
    from hermes.recall import ranking
    from hermes.recall.component import Recall
    from hermes.recall.ranking import rank_messages
    from hermes.runtime import open_store

    settings = load_settings()
    store = open_store(settings)
    semantic = Recall(settings, store).semantic(wait=True)
    assert semantic is not None
    pages: dict[int, Page] = {}
    asking: list[int] = []
    reorder = ranking._first_page

    def record(searcher, scope, terms, ranked, near, config):  # type: ignore[no-untyped-def]
        page = ranked[: config.page]
        ids = [r.message_id for r in page]
        own = searcher.own_words(scope, terms, ids)  # as `_first_page` scores them
        best = max(own.values(), default=0.0) or 1.0
        similar = near.similarities(ids)
        top = page[0].score or 1.0
        feats: dict[str, list[float]] = {name: [] for name in CURRENT}
        for r in page:
            around = similar.get(r.message_id, (0.0,) * (len(CURRENT) - 2))
            values = (r.score / top, *around, own.get(r.message_id, 0.0) / best)
            for name, value in zip(CURRENT, values, strict=True):
                feats[name].append(value)
        pages[asking[-1]] = Page([(r.session_id, r.index) for r in page], feats)
        return reorder(searcher, scope, terms, ranked, near, config)

    ranking._first_page = record  # the stage's inputs, recorded as it runs
    try:
        for i, q in enumerate(questions):
            asking.append(i)
            rank_messages(
                store.search, f"user:{q.conversation}", q.text, limit=20, semantic=semantic
            )
    finally:
        ranking._first_page = reorder
        store.close()
    return pages


def matrix(page: Page, names: Sequence[str]) -> np.ndarray:
    return np.array([page.features[n] for n in names]).T


def fit(pages: list[Page], evidence: list[set[Place]], names: Sequence[str]) -> np.ndarray:
    """Weights (the fused score's fixed at 1) under which evidence outscores the rest of
    its page: logistic loss over every (evidence, other) pair, L2-regularised."""
    pairs = []
    for page, wanted in zip(pages, evidence, strict=True):
        x = matrix(page, names)
        hit = np.array([p in wanted for p in page.places])
        if hit.any() and not hit.all():
            pairs += [row - x[~hit] for row in x[hit]]
    diff = np.vstack(pairs)
    w = np.zeros(len(names))
    w[0] = 1.0
    for _ in range(1000):
        margin = diff @ w
        grad = -(diff * (1.0 / (1.0 + np.exp(margin)))[:, None]).mean(axis=0) + 0.01 * w
        w -= 0.5 * grad
    return w / w[0]


def first_hit(page: Page, wanted: set[Place], weights: np.ndarray, names: Sequence[str]) -> bool:
    scores = matrix(page, names) @ weights
    return page.places[int(np.argmax(scores))] in wanted


def report(pages: dict[int, Page], questions: list[Question]) -> str:
    from hermes.recall.ranking import DEFAULT_CONFIG

    weights = list(DEFAULT_CONFIG.page_weights)
    weights += [0.0] * (len(CURRENT) - 2 - len(weights))  # a feature it has no weight for
    current = np.array([1.0, *weights, DEFAULT_CONFIG.page_own_words])
    convs = sorted({q.conversation for q in questions})
    sets: list[tuple[str, Sequence[str], bool]] = [
        ("current weights", CURRENT, False),
        ("refitted, current features", CURRENT, True),
    ]
    unwindowed = tuple(n for n in CURRENT if n not in WINDOWS)
    sets.append(("refitted, without windows", unwindowed, True))
    lines = [
        f"R@1 of the {len(pages)} questions whose first page is reordered "
        f"(of {len(questions)}), each conversation scored with weights fitted on the others",
        f"{'features':<40}{'all':>7}"
        + "".join(f"{c[5:]:>7}" for c in convs)
        + "".join(f"{CATEGORIES[k][:9]:>10}" for k in CATEGORIES),
    ]
    medians: list[str] = []
    for label, names, refit in sets:
        found: dict[int, bool] = {}
        fitted: list[np.ndarray] = []
        for conv in convs:
            train = [i for i in pages if questions[i].conversation != conv]
            weights = (
                fit([pages[i] for i in train], [questions[i].evidence for i in train], names)
                if refit
                else current
            )
            fitted.append(weights)
            for i in pages:
                if questions[i].conversation == conv:
                    found[i] = first_hit(pages[i], questions[i].evidence, weights, names)

        def share(chosen: list[int], found: dict[int, bool] = found) -> str:
            return f"{sum(found[i] for i in chosen) / max(1, len(chosen)):.3f}"

        lines.append(
            f"{label:<40}{share(list(found)):>7}"
            + "".join(
                f"{share([i for i in found if questions[i].conversation == c]):>7}" for c in convs
            )
            + "".join(
                f"{share([i for i in found if questions[i].category == k]):>10}" for k in CATEGORIES
            )
        )
        if refit:
            median = np.median(np.array(fitted), axis=0)
            medians.append(f"{label}: median of the fits " + ", ".join(f"{w:.2f}" for w in median))
    return "\n".join(lines + medians)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    questions = [
        q
        for path in conversation_files()
        for q in questions_of(path.stem, json.loads(path.read_text()))
    ]
    with tempfile.TemporaryDirectory(prefix="hermes-page-fit-") as tmp:
        workdir = args.workdir or Path(tmp)
        home = workdir / "page-fit"
        if not (home / "state.db").exists():
            run("page-fit", "on", workdir, questions)
        pages = capture(home, questions)
        print(report(pages, questions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
