"""Recall benchmark for `session_search`: one command, prints a table.

    .venv/bin/python bench/recall.py            # 10k and 1M stored messages (~10 min)
    .venv/bin/python bench/recall.py --skip-1m  # 10k only (~30 s)

For each scale it generates personas (bench/recall_data.py) whose long multi-session
histories hold planted facts, imports them with `hermes sessions import --user` and runs the
questions with `hermes sessions search --batch --json` (real subprocesses: the real path is
measured). Recall@k = share of questions with an evidence message (session, index) among the
top k hits. Latency = the search time each result line reports (process start excluded).
On the same data it also scores a plain FTS5 baseline (one message per row, unicode61 without
stemming, OR of the question's words, BM25) and ablations of the ranking, in-process.
Data lives in a temporary directory (or --workdir) and is deleted unless --keep.
"""

from __future__ import annotations

import argparse
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

from hermes.memory.ranking import DEFAULT_CONFIG, RankConfig, rank_messages  # noqa: E402
from hermes.store.sqlite import SQLiteStore  # noqa: E402

_WORD = re.compile(r"\w+", re.UNICODE)
Hits = list[tuple[str, int]]


def hermes(home: Path, *args: str, stdin: str | None = None) -> str:
    env = {**os.environ, "HERMES_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "hermes", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"hermes {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def load_questions(data: Path) -> list[dict]:
    return [json.loads(line) for line in (data / "questions.jsonl").open(encoding="utf-8")]


def import_all(data: Path, home: Path, personas: list[str]) -> float:
    started = time.perf_counter()
    for user in personas:
        hermes(home, "sessions", "import", str(data / f"{user}.jsonl"), "--user", user)
    return time.perf_counter() - started


def run_cli_search(home: Path, data: Path, questions: list[dict]) -> tuple[list[Hits], list[float]]:
    """Each persona's questions in one `--batch` call; hits in question order."""
    results: dict[int, Hits] = {}
    took: list[float] = []
    by_user: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        by_user.setdefault(q["persona"], []).append(i)
    for user, idxs in by_user.items():
        batch = data / f"{user}.queries.jsonl"
        batch.write_text(
            "".join(json.dumps({"query": questions[i]["query"], "limit": 10}) + "\n" for i in idxs),
            encoding="utf-8",
        )
        out = hermes(home, "sessions", "search", "--batch", str(batch), "--json", "--user", user)
        for i, line in zip(idxs, out.splitlines(), strict=True):
            doc = json.loads(line)
            assert doc["query"] == questions[i]["query"]
            results[i] = [(h["session_id"], h["message_index"]) for h in doc["hits"]]
            took.append(doc["took_ms"])
    return [results[i] for i in range(len(questions))], took


def timed(
    questions: list[dict], search: Callable[[str, str], Hits]
) -> tuple[list[Hits], list[float]]:
    hits, took = [], []
    for q in questions:
        started = time.perf_counter()
        hits.append(search("user:" + q["persona"], q["query"]))
        took.append((time.perf_counter() - started) * 1000)
    return hits, took


# ----------------------------------------------------------------------------- baselines


def build_plain(db: Path, data: Path, personas: list[str]) -> sqlite3.Connection:
    """Plain FTS5: one message per row, default unicode61 tokenizer (no stemming)."""
    conn = sqlite3.connect(db)
    conn.executescript(
        "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
        "CREATE TABLE msg (id INTEGER PRIMARY KEY, scope TEXT, session_id TEXT, idx INTEGER);"
        "CREATE VIRTUAL TABLE msg_fts USING fts5(content);"
    )
    rowid = 0
    for user in personas:
        rows, texts = [], []
        for line in (data / f"{user}.jsonl").open(encoding="utf-8"):
            session = json.loads(line)
            for idx, m in enumerate(session["messages"]):
                rowid += 1
                rows.append((rowid, "user:" + user, session["id"], idx))
                texts.append((rowid, m["content"] or ""))
        conn.executemany("INSERT INTO msg VALUES (?, ?, ?, ?)", rows)
        conn.executemany("INSERT INTO msg_fts (rowid, content) VALUES (?, ?)", texts)
        conn.commit()
    return conn


def plain_search(conn: sqlite3.Connection) -> Callable[[str, str], Hits]:
    def search(scope: str, query: str) -> Hits:
        words = list(dict.fromkeys(_WORD.findall(query.lower())))
        if not words:
            return []
        match = " OR ".join('"' + w + '"' for w in words)
        rows = conn.execute(
            "SELECT m.session_id, m.idx FROM msg_fts JOIN msg m ON m.id = msg_fts.rowid "
            "WHERE msg_fts MATCH ? AND m.scope = ? ORDER BY bm25(msg_fts) LIMIT 10",
            (match, scope),
        ).fetchall()
        return [(r[0], r[1]) for r in rows]

    return search


def store_search(store: SQLiteStore) -> Callable[[str, str], Hits]:
    def search(scope: str, query: str) -> Hits:
        words = list(dict.fromkeys(_WORD.findall(query.lower())))
        hits = store.match_messages(scope, words, view="message", limit=10)
        return [(h.session_id, h.index) for h in hits]

    return search


def ranked(store: SQLiteStore, config: RankConfig) -> Callable[[str, str], Hits]:
    def search(scope: str, query: str) -> Hits:
        hits = rank_messages(store, scope, query, limit=10, config=config)
        return [(h.session_id, h.index) for h in hits]

    return search


ABLATIONS: list[tuple[str, RankConfig]] = [
    ("  without neighbouring turns", replace(DEFAULT_CONFIG, view="message")),
    ("  without stopword removal", replace(DEFAULT_CONFIG, stopwords=False)),
    ("  without role prior", replace(DEFAULT_CONFIG, role=0.0)),
    ("  without per-session cap", replace(DEFAULT_CONFIG, per_session=0)),
]

# ----------------------------------------------------------------------------- report


def score(questions: list[dict], hits: list[Hits]) -> dict[int, float]:
    out = {}
    for k in (1, 5, 10):
        found = sum(
            bool({tuple(e) for e in q["evidence"]} & set(h[:k]))
            for q, h in zip(questions, hits, strict=True)
        )
        out[k] = found / len(questions)
    return out


def row(scale: str, method: str, questions: list[dict], hits: list[Hits], took: list[float]) -> str:
    r = score(questions, hits)
    took = sorted(took)
    p95 = took[min(len(took) - 1, int(0.95 * len(took)))]
    return (
        f"| {scale:>5} | {method:<38} | {r[1]:.3f} | {r[5]:.3f} | {r[10]:.3f} | "
        f"{statistics.median(took):8.1f} | {p95:8.1f} |"
    )


def by_kind(questions: list[dict], hits: list[Hits]) -> str:
    kinds: dict[str, list[int]] = {}
    for q, h in zip(questions, hits, strict=True):
        kinds.setdefault(q["kind"], []).append(bool({tuple(e) for e in q["evidence"]} & set(h[:5])))
    return ", ".join(f"{k} {sum(v) / len(v):.2f} (n={len(v)})" for k, v in sorted(kinds.items()))


def run_scale(
    label: str, root: Path, personas: int, per_persona: int, extra: int, seed: int, ablations: bool
) -> list[str]:
    data, home = root / "data", root / "home"
    started = time.perf_counter()
    write_dataset(
        data, personas=personas, per_persona=per_persona, extra_per_persona=extra, seed=seed
    )
    users = [f"p{i:02d}" for i in range(personas)]
    questions = load_questions(data)
    gen_s = time.perf_counter() - started
    import_s = import_all(data, home, users)
    store = SQLiteStore(home / "state.db")
    total = store.count_messages()
    print(
        f"[{label}] {total:,} messages, {len(questions)} questions; generated in {gen_s:.0f}s, "
        f"imported via CLI in {import_s:.0f}s ({total / import_s:,.0f} msg/s)",
        file=sys.stderr,
        flush=True,
    )
    lines = []
    hits, took = run_cli_search(home, data, questions)
    lines.append(row(label, "hermes sessions search (CLI)", questions, hits, took))
    kinds = by_kind(questions, hits)
    plain = build_plain(root / "plain.db", data, users)
    lines.append(
        row(
            label,
            "plain FTS5 (1 msg/row, no stemming)",
            questions,
            *timed(questions, plain_search(plain)),
        )
    )
    plain.close()
    lines.append(
        row(
            label,
            "FTS5 porter, 1 msg/row (store.search)",
            questions,
            *timed(questions, store_search(store)),
        )
    )
    if ablations:
        for name, config in ABLATIONS:
            lines.append(row(label, name, questions, *timed(questions, ranked(store, config))))
    store.close()
    print(f"[{label}] recall@5 by question kind: {kinds}", file=sys.stderr, flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-1m", action="store_true", help="only the 10k-message scale")
    parser.add_argument("--personas", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path, help="where to put data (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the generated data")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="hermes-recall-"))
    work.mkdir(parents=True, exist_ok=True)
    header = [
        "| scale | method                                 |  R@1  |  R@5  | R@10  | med ms   | p95 ms   |",
        "|------:|----------------------------------------|------:|------:|------:|---------:|---------:|",
    ]
    lines = []
    try:
        per = 10_000 // args.personas
        lines += run_scale("10k", work / "10k", args.personas, per, 0, args.seed, ablations=True)
        if not args.skip_1m:
            extra = 1_000_000 // args.personas - per
            lines += run_scale(
                "1M", work / "1m", args.personas, per, extra, args.seed, ablations=True
            )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("\n".join(header + lines))


if __name__ == "__main__":
    main()
