"""The LoCoMo dev slice: real long-term conversations, scored as the held-out check scores them.

    .venv/bin/python bench/recall_locomo.py                 # meaning on (the default) and off
    .venv/bin/python bench/recall_locomo.py --embeddings on # one setting only
    .venv/bin/python bench/recall_locomo.py --ablations     # ranking ideas one at a time
    .venv/bin/python bench/recall_locomo.py --store both    # SQLite and PostgreSQL side by side

Reads the five conversations in ../shared/data/locomo-dev/ (never copied into the repo) and
follows its README to the letter: each conversation imported into its own user scope with
`hermes sessions import FILE --user conv-<n>` (one Hermes session per LoCoMo session, titled
with its date and time; each turn one message "<speaker>: <text>", plus " [image: <caption>]"
when the turn shared an image; role user for speaker_a, assistant for the other), then every
question with evidence (category 5 left out) asked with `hermes sessions search --batch
--json` at limit 20. A hit counts when its (session id, message index) is an evidence turn.
Prints recall@1/5/10/20 overall and by category, and the searches' latency (`took_ms`).
`--ablations` imports once and reruns the questions in-process with one ranking idea
changed at a time, with each conversation's R@10 beside the total: a change that helps
only one or two of the five people is a rule fitted to them, not a change in kind.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo-dev"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (1, 5, 10, 20)


@dataclass
class Question:
    conversation: str
    text: str
    category: int
    evidence: set[tuple[str, int]]


@dataclass
class Run:
    label: str
    hits: dict[int, list[tuple[str, int]]] = field(default_factory=dict)  # question -> hits
    took_ms: list[float] = field(default_factory=list)
    import_s: float = 0.0


def conversation_files(data: Path | None = None) -> list[Path]:
    data = DATA if data is None else data
    files = sorted(data.glob("conv-*.json"))
    if not files:
        raise SystemExit(f"no LoCoMo conversations in {data} (see its README)")
    return files


def sessions_of(conv: dict) -> list[dict]:
    """One Hermes session per LoCoMo session, in the import format of `hermes sessions`."""
    out = []
    k = 1
    while f"session_{k}" in conv:
        turns = conv[f"session_{k}"]
        messages = []
        for turn in turns:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            role = "user" if turn["speaker"] == conv["speaker_a"] else "assistant"
            messages.append({"role": role, "content": text})
        out.append(
            {"id": f"session_{k}", "title": conv[f"session_{k}_date_time"], "messages": messages}
        )
        k += 1
    return out


def questions_of(name: str, conv: dict) -> list[Question]:
    out = []
    for qa in conv["qa"]:
        if qa.get("category") == 5 or not qa.get("evidence"):
            continue
        evidence = set()
        for dia in qa["evidence"]:
            for part in str(dia).replace(";", " ").split():  # a few list "D1:3; D1:4" as one
                if ":" not in part or not part.startswith("D"):
                    continue
                session, turn = part[1:].split(":", 1)
                if session.isdigit() and turn.isdigit():
                    evidence.add((f"session_{int(session)}", int(turn) - 1))
        if evidence:
            out.append(Question(name, qa["question"], int(qa["category"]), evidence))
    return out


def hermes(*args: str, env: dict[str, str], stdin: str | None = None) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "hermes", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode != 0:
        raise SystemExit(f"hermes {' '.join(args[:3])} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def run(
    label: str,
    embeddings: str,
    workdir: Path,
    questions: list[Question],
    database_url: str | None = None,
) -> Run:
    """Import and ask in a fresh home; on `database_url` (PostgreSQL) when given."""
    home = workdir / label.replace(" ", "-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env |= {"HERMES_HOME": str(home), "HERMES_EMBEDDINGS": embeddings}
    if database_url:
        env["HERMES_DATABASE_URL"] = database_url
    result = Run(label)
    started = time.perf_counter()
    for path in conversation_files():
        conv = json.loads(path.read_text())
        source = workdir / f"{path.stem}.jsonl"
        source.write_text("".join(json.dumps(s) + "\n" for s in sessions_of(conv)))
        hermes("sessions", "import", str(source), "--user", path.stem, env=env)
    result.import_s = time.perf_counter() - started
    by_conversation: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        by_conversation.setdefault(q.conversation, []).append(i)
    for name, indexes in by_conversation.items():
        batch = "".join(
            json.dumps({"query": questions[i].text, "limit": 20}) + "\n" for i in indexes
        )
        out = hermes(
            "sessions", "search", "--batch", "-", "--user", name, "--json", env=env, stdin=batch
        )
        for i, line in zip(indexes, out.splitlines(), strict=True):
            answer = json.loads(line)
            result.hits[i] = [(h["session_id"], h["message_index"]) for h in answer["hits"]]
            result.took_ms.append(float(answer["took_ms"]))
    return result


def recall(
    run: Run,
    questions: list[Question],
    k: int,
    category: int | None = None,
    conversation: str | None = None,
) -> float:
    chosen = [
        i
        for i, q in enumerate(questions)
        if category in (None, q.category) and conversation in (None, q.conversation)
    ]
    found = sum(1 for i in chosen if questions[i].evidence & set(run.hits[i][:k]))
    return found / len(chosen) if chosen else 0.0


def table(runs: list[Run], questions: list[Question]) -> str:
    lines = [
        f"LoCoMo dev slice: {len(questions)} questions, {len(conversation_files())} "
        "conversations, each in its own scope",
        "",
        f"{'setting':<22}{'kind':<13}{'n':>5}" + "".join(f"{'R@' + str(k):>8}" for k in KS),
    ]
    for r in runs:
        for category in (None, *CATEGORIES):
            n = sum(1 for q in questions if category in (None, q.category))
            name = "all" if category is None else CATEGORIES[category]
            values = "".join(f"{recall(r, questions, k, category):>8.3f}" for k in KS)
            lines.append(f"{r.label:<22}{name:<13}{n:>5}{values}")
        lines.append("")
    lines.append(f"{'setting':<22}{'import s':>10}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}")
    for r in runs:
        ordered = sorted(r.took_ms)
        p95 = ordered[int(0.95 * (len(ordered) - 1))]
        lines.append(
            f"{r.label:<22}{r.import_s:>10.1f}{statistics.median(ordered):>9.1f}"
            f"{p95:>9.1f}{ordered[-1]:>9.1f}"
        )
    return "\n".join(lines)


def ablations(workdir: Path, questions: list[Question]) -> str:
    """The dev slice ranked in-process with one idea changed at a time (same data, same
    index as the CLI run: the default row equals `meaning on` above)."""
    from dataclasses import replace

    if not (workdir / "ablations" / "state.db").exists():  # a kept --workdir is reused
        run("ablations", "on", workdir, questions)  # imports the five conversations
    os.environ["HERMES_HOME"] = str(workdir / "ablations")
    os.environ["HERMES_EMBEDDINGS"] = "on"
    from hermes.config.settings import load_settings
    from hermes.recall.component import Recall
    from hermes.recall.ranking import DEFAULT_CONFIG, rank_messages
    from hermes.runtime import open_store

    settings = load_settings()
    store = open_store(settings)
    semantic = Recall(settings, store).semantic(wait=True)
    rows = [
        ("default", DEFAULT_CONFIG, semantic),
        ("words only", DEFAULT_CONFIG, None),
        *(
            (f"{name}={value}", replace(DEFAULT_CONFIG, **{name: value}), semantic)
            for name, value in ABLATIONS
        ),
    ]
    names = sorted({q.conversation for q in questions})
    lines = [
        f"{'ranking':<28}"
        + "".join(f"{'R@' + str(k):>7}" for k in KS)
        + "".join(f"{n[5:]:>8}" for n in names)
        + "   (R@10 per conversation)"
    ]
    for label, config, index in rows:
        result = Run(label)
        for i, q in enumerate(questions):
            ranked = rank_messages(
                store.search,
                f"user:{q.conversation}",
                q.text,
                limit=20,
                config=config,
                semantic=index,
            )
            result.hits[i] = [(r.session_id, r.index) for r in ranked]
        per = [recall(result, [q for q in questions], 10, None, conversation=n) for n in names]
        lines.append(
            f"{label:<28}"
            + "".join(f"{recall(result, questions, k):>7.3f}" for k in KS)
            + "".join(f"{v:>8.3f}" for v in per)
        )
    store.close()
    return "\n".join(lines)


# one idea at a time: name of the RankConfig field and the value tried
ABLATIONS: list[tuple[str, object]] = [
    ("per_session", 2),
    ("per_session", 10),
    ("semantic", 3.0),
    ("semantic_k", 60.0),
    ("trigrams", False),
    ("context_weight", 0.0),
    ("speaker_meaning", 0.0),
    ("sentences", 0.0),
    ("replies", 0),
    ("replies", 3),
    ("first_named", False),
    ("when", 0.0),
    ("speaker", 0.0),
    ("role", 0.0),
    ("question", 1.0),
    ("near_copies", False),
    ("unnamed_meaning", False),
    ("page", 0),
    ("page", 5),
    ("others", 0),
    ("others_within", 2),
    ("page_weights", (0.42, 0.4, 0.22, 0.23, 0.15)),  # the page before its window term
]


def main() -> int:
    global DATA
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embeddings", choices=["on", "off", "both"], default="both")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--data", type=Path, default=None, help="the conversations' folder")
    parser.add_argument("--ablations", action="store_true", help="ranking ideas one at a time")
    parser.add_argument(
        "--store",
        choices=["sqlite", "postgresql", "both"],
        default="sqlite",
        help="PostgreSQL: a database made for each run on HERMES_BENCH_PG's server, dropped after",
    )
    args = parser.parse_args()
    if args.data is not None:
        DATA = args.data
    questions = [
        q
        for path in conversation_files()
        for q in questions_of(path.stem, json.loads(path.read_text()))
    ]
    settings = ["on", "off"] if args.embeddings == "both" else [args.embeddings]
    with tempfile.TemporaryDirectory(prefix="hermes-locomo-") as tmp:
        workdir = args.workdir or Path(tmp)
        if args.ablations:
            print(ablations(workdir, questions))
            return 0
        stores = ["sqlite", "postgresql"] if args.store == "both" else [args.store]
        runs = []
        for store in stores:
            for s in settings:
                label = f"meaning {s}" if s == "on" else "words only"
                if args.store != "sqlite":
                    label = f"{store} {label}"
                if store == "sqlite":
                    runs.append(run(label, s, workdir, questions))
                    continue
                from scale import create_db, drop_db, url_of

                db = create_db()
                try:
                    runs.append(run(label, s, workdir, questions, url_of(db)))
                finally:
                    drop_db(db)
    print(table(runs, questions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
