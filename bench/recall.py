"""Recall benchmark for `session_search`: one command, prints tables.

    .venv/bin/python bench/recall.py            # 10k and 1M stored messages
    .venv/bin/python bench/recall.py --skip-1m  # 10k only (~5 min with embeddings)
    .venv/bin/python bench/recall.py --per-conversation  # each conversation its own scope

Four slices of questions, each with the message(s) that hold the answer:
- `dialogue` (bench/recall_dialogue.py): conversations between two named friends over
  months, questions of kinds single / split / temporal / update / multi / period, all in one scope;
- `varied` (10k only): the same kind of conversations, but the small talk and reactions are
  composed from parts, so a turn is rarely said twice word for word (in `dialogue` nearly
  every filler turn is one of ~30 stock lines, which flatters the rule that shows a
  repeated text once; real chat, and most likely the held-out benchmark, is like `varied`);
- `long` (10k only): `varied`, with most turns saying their point among one or two other
  sentences, as people write in long chats (a whole turn's embedding is then diluted);
- `chat` (bench/recall_data.py, the earlier synthetic set): a user and the assistant, one
  scope per persona, kinds direct / spread / updated / assistant. (10k scale only.)
The 1M scale adds ~990k messages of other people's chat to the dialogue scope (one scope of
1M messages: the latency goal). Data is imported with `hermes sessions import` and searched
with `hermes sessions search --batch --json` (real subprocesses, the path a user or the
held-out benchmark takes; --per-conversation imports each conversation of the dialogue
slices into a scope of its own, ~900 messages, as a benchmark that keeps them apart would);
recall@k = share of questions with an evidence message
(session id, message index) among the top k hits; latency = the `took_ms` each result line
reports. The ablation table reruns the dialogue and chat questions in-process with one
ranking idea changed at a time. Data lives in a temporary directory unless --workdir/--keep.

Semantic search (the `embeddings` extra, when installed): the 10k scale is imported with
`--no-embed` (the import rate is the store's own), then embedded in-process (its own rate),
so the searches fuse words and meaning. Embedding 1M messages takes most of an hour on two
cores, so the 1M scale searches by words alone unless --embed-1m.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from recall_data import write_dataset  # noqa: E402
from recall_dialogue import write_dialogues  # noqa: E402

from hermes.config.settings import load_settings  # noqa: E402
from hermes.memory import embeddings  # noqa: E402
from hermes.recall.ranking import (  # noqa: E402
    DEFAULT_CONFIG,
    RankConfig,
    SemanticSearch,
    rank_messages,
)
from hermes.store import search_index  # noqa: E402
from hermes.store.sqlite import SQLiteStore  # noqa: E402

COMMON_ROWS = search_index.COMMON_ROWS

_WORD = re.compile(r"\w+", re.UNICODE)
Hits = list[tuple[str, int]]
DIALOGUE_SCOPE = "bench"
VARIED_SCOPE = "bench-varied"
LONG_SCOPE = "bench-long"


def hermes(home: Path, *args: str, semantic: bool = True) -> str:
    env = {**os.environ, "HERMES_HOME": str(home)}
    env["HERMES_EMBEDDINGS"] = "auto" if semantic else "off"
    done = subprocess.run(
        [sys.executable, "-m", "hermes", *args], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"hermes {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def cli_search(
    home: Path, work: Path, user: str, queries: list[str], semantic: bool
) -> tuple[list[Hits], list[float]]:
    batch = work / f"{user}.queries.jsonl"
    batch.write_text("".join(json.dumps({"query": q, "limit": 10}) + "\n" for q in queries))
    out = hermes(
        home,
        "sessions",
        "search",
        "--batch",
        str(batch),
        "--json",
        "--user",
        user,
        semantic=semantic,
    )
    hits, took = [], []
    for q, line in zip(queries, out.splitlines(), strict=True):
        doc = json.loads(line)
        assert doc["query"] == q
        hits.append([(h["session_id"], h["message_index"]) for h in doc["hits"]])
        took.append(doc["took_ms"])
    return hits, took


def found(q: dict, h: Hits, k: int) -> bool:
    return bool({tuple(e) for e in q["evidence"]} & set(h[:k]))


def recall(qs: list[dict], hits: list[Hits]) -> tuple[float, float, float]:
    n = max(1, len(qs))
    r1, r5, r10 = (
        sum(found(q, h, k) for q, h in zip(qs, hits, strict=True)) / n for k in (1, 5, 10)
    )
    return r1, r5, r10


def evidence_share(qs: list[dict], hits: list[Hits], k: int = 10) -> float:
    """Mean share of each question's evidence turns in its top k (R@k counts one)."""
    shares = [
        len({tuple(e) for e in q["evidence"]} & set(h[:k])) / len(q["evidence"])
        for q, h in zip(qs, hits, strict=True)
    ]
    return sum(shares) / max(1, len(shares))


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))] if values else 0.0


# ----------------------------------------------------------------------------- data


class Slice:
    """Questions of one kind of data, and how to search them (scope per question)."""

    def __init__(self, name: str, questions: list[dict]) -> None:
        self.name, self.questions = name, questions

    def scope_users(self) -> dict[str, list[int]]:
        users: dict[str, list[int]] = {}
        for i, q in enumerate(self.questions):
            users.setdefault(q["user"], []).append(i)
        return users


def by_conversation(path: Path, scope: str) -> list[tuple[Path, str]]:
    """A dialogues file split into one file per conversation (session ids "c03-s12"), each
    to be imported into a scope of its own ("<scope>-c03")."""
    conversations: dict[str, list[str]] = {}
    for line in path.open(encoding="utf-8"):
        conversations.setdefault(json.loads(line)["id"].split("-")[0], []).append(line)
    files = []
    for name, lines in sorted(conversations.items()):
        part = path.with_name(f"{path.stem}-{name}.jsonl")
        part.write_text("".join(lines), encoding="utf-8")
        files.append((part, f"{scope}-{name}"))
    return files


def dialogue_slice(
    name: str, questions: list[dict], path: Path, scope: str, apart: bool
) -> tuple[Slice, list[tuple[Path, str]]]:
    """A slice of dialogue questions and the files to import for it: all conversations in
    one scope, or (`apart`) each in a scope of its own, searched in its own scope."""
    if not apart:
        return Slice(name, [{**q, "user": scope} for q in questions]), [(path, scope)]
    asked = [{**q, "user": f"{scope}-{q['evidence'][0][0].split('-')[0]}"} for q in questions]
    return Slice(name, asked), by_conversation(path, scope)


def build(
    root: Path, extra: int, with_chat: bool, seed: int, apart: bool = False
) -> tuple[Path, list[Slice], int, float, int]:
    data, home = root / "data", root / "home"
    qs = write_dialogues(data, conversations=10, sessions=32, extra=extra, seed=seed)
    first, files = dialogue_slice("dialogue", qs, data / "dialogues.jsonl", DIALOGUE_SCOPE, apart)
    slices = [first]
    files += [(f, DIALOGUE_SCOPE) for f in sorted(data.glob("filler-*.jsonl"))]
    if with_chat:  # (10k) the same conversations with small talk rarely said twice
        vq = write_dialogues(data / "varied", conversations=10, sessions=32, seed=seed, varied=True)
        lq = write_dialogues(
            data / "long", conversations=10, sessions=32, seed=seed, varied=True, long=True
        )
        for name, questions, scope in (("varied", vq, VARIED_SCOPE), ("long", lq, LONG_SCOPE)):
            path = data / name / "dialogues.jsonl"
            more, paths = dialogue_slice(name, questions, path, scope, apart)
            slices.append(more)
            files += paths
    if with_chat and not apart:  # (one scope per persona already)
        chat = data / "chat"
        write_dataset(chat, personas=10, per_persona=1000, seed=seed)
        cq = [json.loads(line) for line in (chat / "questions.jsonl").open()]
        slices.append(Slice("chat", [{**q, "user": q["persona"]} for q in cq]))
        files += [(chat / f"p{i:02d}.jsonl", f"p{i:02d}") for i in range(10)]
    started = time.perf_counter()
    for path, user in files:
        hermes(home, "sessions", "import", str(path), "--user", user, "--no-embed")
    took = time.perf_counter() - started
    store = SQLiteStore(home / "state.db")
    total = store.count_messages()
    store.close()
    return home, slices, total, took, len(files)


def embed_all(home: Path) -> str:
    """Give every message its vector, in-process; one line saying how fast."""
    from hermes.recall.semantic import embed_pending

    settings = load_settings(home, env={"HERMES_HOME": str(home)})
    embedder = embeddings.load(settings)
    assert embedder is not None
    store = SQLiteStore(home / "state.db")
    try:
        started = time.perf_counter()
        done, _ = embed_pending(store, embedder)
        took = time.perf_counter() - started
    finally:
        store.close()
    return f"{done:,} messages embedded in {took:.1f}s: {done / took:,.0f} msg/s"


def semantic_search(home: Path, store: SQLiteStore) -> SemanticSearch | None:
    from hermes.recall.semantic import SemanticIndex

    settings = load_settings(home, env={"HERMES_HOME": str(home)})
    embedder = embeddings.load(settings)
    return None if embedder is None else SemanticIndex(store, embedder)


# ----------------------------------------------------------------------------- reports


def kind_rows(scale: str, sl: Slice, hits: list[Hits], took: list[float]) -> list[str]:
    kinds: dict[str, list[int]] = {}
    for i, q in enumerate(sl.questions):
        kinds.setdefault(q["kind"], []).append(i)
    rows = []
    for kind in [*sorted(kinds), "all"]:
        idx = kinds.get(kind, list(range(len(sl.questions))))
        qs, hs = [sl.questions[i] for i in idx], [hits[i] for i in idx]
        r, share = recall(qs, hs), evidence_share(qs, hs)
        times = [took[i] for i in idx]
        rows.append(
            f"| {scale:>7} | {sl.name:<8} | {kind:<9} | {len(idx):>4} | {r[0]:.3f} | {r[1]:.3f} "
            f"| {r[2]:.3f} | {share:.3f} | {statistics.median(times):6.1f} "
            f"| {pct(times, 0.95):6.1f} |"
        )
    return rows


def ranked(
    store: SQLiteStore, config: RankConfig, semantic: SemanticSearch | None
) -> Callable[[str, str], Hits]:
    def search(scope: str, query: str) -> Hits:
        hits = rank_messages(store.search, scope, query, limit=10, config=config, semantic=semantic)
        return [(h.session_id, h.index) for h in hits]

    return search


def plain_search(store: SQLiteStore) -> Callable[[str, str], Hits]:
    """Baseline: one message per row, no stemming, OR of the question's words, BM25."""

    def search(scope: str, query: str) -> Hits:
        words = list(dict.fromkeys(_WORD.findall(query.lower())))
        hits = store.search.match_messages(scope, words, view="exact", limit=10)
        return [(h.session_id, h.index) for h in hits]

    return search


ABLATIONS: list[tuple[str, RankConfig | None]] = [
    ("plain FTS5 (1 msg/row, no stemming)", None),
    ("current default", DEFAULT_CONFIG),
    ("  without semantic search (words only)", replace(DEFAULT_CONFIG, semantic=0.0)),
    ("  semantic weight 3 (not 0.5)", replace(DEFAULT_CONFIG, semantic=3.0)),
    ("  without the semantic in-context list", replace(DEFAULT_CONFIG, context_weight=0.0)),
    ("  names kept in the semantic question", replace(DEFAULT_CONFIG, unnamed_meaning=False)),
    ("  without the named speaker's own list", replace(DEFAULT_CONFIG, speaker_meaning=0.0)),
    ("  replies to follow-ups not brought in", replace(DEFAULT_CONFIG, replies=0)),
    ("  without date awareness", replace(DEFAULT_CONFIG, period=0.0)),
    ("  semantic lists keep other times too", replace(DEFAULT_CONFIG, period_only=False)),
    ("  no similarity floor", replace(DEFAULT_CONFIG, semantic_floor=-1.0)),
    ("  without neighbouring turns", replace(DEFAULT_CONFIG, view="message")),
    ("  without stopword removal", replace(DEFAULT_CONFIG, stopwords=False)),
    ("  without role prior", replace(DEFAULT_CONFIG, role=0.0)),
    ("  without speaker boost", replace(DEFAULT_CONFIG, speaker=0.0)),
    ("  without cron demotion (no cron here)", replace(DEFAULT_CONFIG, demoted=1.0)),
    ("  questions not demoted", replace(DEFAULT_CONFIG, question=1.0)),
    ("  without per-session cap", replace(DEFAULT_CONFIG, per_session=0)),
    ("  two hits a session (not five)", replace(DEFAULT_CONFIG, per_session=2)),
    ("  repeated texts not shown once first", replace(DEFAULT_CONFIG, repeats=0)),
    ("  near copies set aside", replace(DEFAULT_CONFIG, near_copies=True)),
    ("  sentences not scored on their own", replace(DEFAULT_CONFIG, sentences=0.0)),
    ("  near copies by whole texts only", replace(DEFAULT_CONFIG, sentence_copies=False)),
    ("  without recency", replace(DEFAULT_CONFIG, recency=0.0)),
    ("  questions about now: no newest-first", replace(DEFAULT_CONFIG, present=0.0)),
]


def ablation_rows(scale: str, home: Path, slices: list[Slice], semantic: bool) -> list[str]:
    store = SQLiteStore(home / "state.db")
    near = semantic_search(home, store) if semantic else None
    rows = []
    try:
        for name, config in [*ABLATIONS, ("  common words pick candidates too", DEFAULT_CONFIG)]:
            search = plain_search(store) if config is None else ranked(store, config, near)
            search_index.COMMON_ROWS = 10**12 if "common words" in name else COMMON_ROWS
            cells = []
            for sl in slices:
                hits, took = [], []
                for q in sl.questions:
                    started = time.perf_counter()
                    hits.append(search("user:" + q["user"], q["query"]))
                    took.append((time.perf_counter() - started) * 1000)
                r = recall(sl.questions, hits)
                cells.append(f"{r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} | {pct(took, 0.95):6.1f}")
            rows.append(f"| {scale:>5} | {name:<38} | " + " | ".join(cells) + " |")
    finally:
        store.close()
    return rows


def semantic_latency(home: Path, questions: list[dict]) -> str:
    """Search latency with search.max_vectors (its default) real vectors in the dialogue
    scope: its newest messages, embedded here as `hermes sessions import` would (a few
    minutes). Timing only: recall at 1M is measured by words."""
    from hermes.recall.semantic import SemanticIndex, embed_pending

    settings = load_settings(home, env={"HERMES_HOME": str(home)})
    vectors = settings.search.max_vectors
    embedder = embeddings.load(settings)
    assert embedder is not None
    store = SQLiteStore(home / "state.db")
    scope = "user:" + DIALOGUE_SCOPE
    try:
        assert store.vectors is not None
        starts = store.vectors.newest_starts(vectors, scope=scope)  # as an import embeds
        started = time.perf_counter()
        done, _ = embed_pending(store, embedder, scope=scope, starts=starts)
        embed_s = time.perf_counter() - started
        gc.collect()  # the burst's garbage: a serving process collected it long ago
        index = SemanticIndex(store, embedder, max_vectors=vectors)
        rank_messages(store.search, scope, "warm up", limit=10, semantic=index)  # loads the matrix
        # the search as it runs (its halves beside each other) and one after the other
        # (`RankConfig.overlap`), taking turns question by question
        configs = {"beside": DEFAULT_CONFIG, "after": replace(DEFAULT_CONFIG, overlap=False)}
        took: dict[str, list[float]] = {name: [] for name in configs}
        cpu: dict[str, list[float]] = {name: [] for name in configs}
        for i, q in enumerate(questions):
            for name in sorted(configs, reverse=bool(i % 2)):
                started, used = time.perf_counter(), time.process_time()
                rank_messages(
                    store.search, scope, q["query"], limit=10, semantic=index, config=configs[name]
                )
                took[name].append((time.perf_counter() - started) * 1000)
                cpu[name].append((time.process_time() - used) * 1000)
        count = store.connection.execute(
            "SELECT count(*) FROM message_vectors WHERE scope = ?", (scope,)
        ).fetchone()[0]
    finally:
        store.close()
    rate = f"{done / embed_s:,.0f} msg/s" if done else "already embedded"
    return f"search with {count:,} vectors in the scope ({rate}): " + "; ".join(
        f"{label} median {statistics.median(took[name]):.1f} ms, p95 "
        f"{pct(took[name], 0.95):.1f} ms (CPU of the process, which other jobs' load inflates "
        f"less: median {statistics.median(cpu[name]):.1f} ms, p95 {pct(cpu[name], 0.95):.1f} ms)"
        for name, label in (("beside", "as it runs"), ("after", "its halves one after the other"))
    )


def run_scale(
    label: str, root: Path, extra: int, seed: int, ablate: bool, embed: bool, apart: bool = False
) -> tuple[list[str], list[str]]:
    home, slices, total, import_s, files = build(
        root, extra, with_chat=not extra, seed=seed, apart=apart
    )
    print(
        f"[{label}] {total:,} messages imported by {files} `hermes sessions import` runs in "
        f"{import_s:.1f}s: {total / import_s:,.0f} msg/s, process start-ups included",
        file=sys.stderr,
        flush=True,
    )
    semantic = embed and embeddings.extra_installed()
    if semantic:
        print(f"[{label}] {embed_all(home)}", file=sys.stderr, flush=True)
    rows: list[str] = []
    for sl in slices:
        all_hits: list[Hits] = [[] for _ in sl.questions]
        all_took: list[float] = [0.0 for _ in sl.questions]
        for user, idxs in sl.scope_users().items():
            queries = [sl.questions[i]["query"] for i in idxs]
            hits, took = cli_search(home, root, user, queries, semantic)
            for i, h, t in zip(idxs, hits, took, strict=True):
                all_hits[i], all_took[i] = h, t
        rows += kind_rows(label + ("+sem" if semantic else ""), sl, all_hits, all_took)
    abl = ablation_rows(label, home, slices, semantic) if ablate else []
    if extra and embeddings.extra_installed() and not semantic:
        # in a process of its own, like `hermes sessions search`: this one's heap and
        # thread pools, after a million messages, are not what a search meets
        queries = root / "latency.queries.json"
        queries.write_text(json.dumps(slices[0].questions))
        done = subprocess.run(
            [sys.executable, __file__, "--semantic-latency", str(home), str(queries)],
            capture_output=True,
            text=True,
            check=True,
        )
        line = done.stdout.strip().splitlines()[-1]
        print(f"[{label}] {line}", file=sys.stderr, flush=True)
        abl.append(f"| {label:>5} | words + meaning, {line} |")
    return rows, abl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-1m", action="store_true", help="only the 10k-message scale")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--workdir", type=Path, help="where to put data (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the generated data")
    parser.add_argument(
        "--embed-1m", action="store_true", help="embed the 1M scale too (most of an hour)"
    )
    parser.add_argument(
        "--per-conversation",
        action="store_true",
        help="only the 10k dialogue slices, each conversation in a scope of its own",
    )
    parser.add_argument(
        "--semantic-latency", nargs=2, metavar=("HOME", "QUESTIONS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.semantic_latency:
        home, questions = (Path(p) for p in args.semantic_latency)
        print(semantic_latency(home, json.loads(questions.read_text())))
        return
    work = args.workdir or Path(tempfile.mkdtemp(prefix="hermes-recall-"))
    work.mkdir(parents=True, exist_ok=True)
    rows, abl = [], []
    try:
        if args.per_conversation:
            r, a = run_scale(
                "conv", work / "conv", 0, args.seed, ablate=False, embed=True, apart=True
            )
        else:
            r, a = run_scale("10k", work / "10k", 0, args.seed, ablate=True, embed=True)
        rows, abl = rows + r, abl + a
        if not args.skip_1m and not args.per_conversation:
            r, a = run_scale(
                "1M", work / "1m", 990_000, args.seed, ablate=True, embed=args.embed_1m
            )
            rows, abl = rows + r, abl + a
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("Recall of `hermes sessions search --batch --json` by question kind:")
    print("(R@k: a question counts when any of its evidence turns is in the top k; E@10: the")
    print("mean share of its evidence turns in the top 10, which multi-turn answers need whole)")
    print(
        "|   scale | slice    | kind      |    n |  R@1  |  R@5  | R@10  | E@10  | med ms | p95 ms |"
    )
    print(
        "|--------:|----------|-----------|-----:|------:|------:|------:|------:|-------:|-------:|"
    )
    print("\n".join(rows))
    print("\nAblations, in-process (dialogue R@1 | R@5 | R@10 | p95 ms, then varied, long, chat):")
    print(
        "| scale | ranking                                | "
        + " | ".join(f"{k} R@1 | {k} R@5 | {k} R@10 | {k} p95 " for k in "dvlc")
        + " |"
    )
    print("\n".join(abl))


if __name__ == "__main__":
    sqlite3.threadsafety  # noqa: B018 - the bench needs the stdlib sqlite3 module
    main()
