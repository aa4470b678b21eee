"""`hermes sessions`: list, show, export, import, delete stored conversations."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hermes.cli.progress import progress
from hermes.cli_common import fail, parse_file_or_exit, scope_or_exit, settings_or_exit
from hermes.config.settings import Settings
from hermes.runtime import open_store
from hermes.store.base import Store

if TYPE_CHECKING:
    from hermes.memory.embeddings import Embedder
    from hermes.store.transfer import ImportedSession

# hermes.store.transfer (its pydantic models) is imported by export and import only: `list`,
# `show` and `delete` start sooner without it.

app = typer.Typer(
    help="List, show, search, export and import stored conversations.", no_args_is_help=True
)

UserOption = typer.Option(None, "--user", help="End-user scope (default: the owner's).")
SEARCH_EMBED_MAX = 20_000  # `search` embeds at most this many missing messages first


def _semantic_or_exit(settings: Settings) -> None:
    from hermes.memory import embeddings

    try:
        embeddings.enabled(settings)
    except embeddings.EmbeddingsUnavailableError as exc:
        fail(str(exc), 1)


def _embedder(
    settings: Settings, store: Store, worth_it: Callable[[], bool] | None = None
) -> Embedder | None:
    """The embedding model, or None when semantic search is off for this store (or
    `worth_it()` says there is nothing to do); exits saying why when it is on but cannot
    load."""
    from hermes.memory import embeddings

    try:
        if store.vectors is None or not embeddings.enabled(settings):
            return None
        if worth_it is not None and not worth_it():
            return None
        return embeddings.load(settings)
    except embeddings.EmbeddingsUnavailableError as exc:
        fail(str(exc), 1)


def _embed(settings: Settings, store: Store, scope: str | None, *, most: int | None = None) -> int:
    """Give messages without a vector one (semantic search), with a progress bar; 0 when
    semantic search is off. More than `most` pending: none, and a hint on stderr. Only a
    scope's newest `search.max_vectors` messages are searched by meaning: older ones get
    no vector (at a million messages, hours of work for nothing)."""
    from hermes.memory import embeddings

    pending = 0
    starts: dict[str, int] = {}

    def worth_it() -> bool:
        nonlocal pending, starts
        assert store.vectors is not None
        starts = store.vectors.newest_starts(settings.search.max_vectors, scope=scope)
        name = embeddings.vector_name(settings)
        pending = store.vectors.count_pending(name, scope=scope, starts=starts)
        if most is not None and pending > most:
            typer.echo(
                f"note: {pending:,} messages are not in the semantic index yet; "
                "`hermes sessions reindex` adds them (searching by words meanwhile)",
                err=True,
            )
            return False
        return pending > 0

    embedder = _embedder(settings, store, worth_it)
    if embedder is None:
        return 0
    from hermes.recall.semantic import embed_pending  # numpy: only once there is work

    try:
        with progress("embedding messages for semantic search", pending) as advance:
            done, _ = embed_pending(store, embedder, scope=scope, starts=starts, progress=advance)
        _embed_windows_with(store, embedder, scope)
    except embeddings.EmbeddingsUnavailableError as exc:
        fail(f"{exc}; what was embedded before stays, the rest is searched by words", 1)
    return done


def _embed_windows_with(store: Store, embedder: Embedder, scope: str | None) -> int:
    """Embed each embedded turn with the turns before it (`recall.windows`) where it is not
    yet; how many turns were."""
    from hermes.recall.windows import embed_windows

    with progress("embedding each turn with the turns before it") as advance:
        done, _ = embed_windows(store, embedder, scope=scope, progress=advance)
    return done


def _embed_windows(settings: Settings, store: Store) -> int:
    """`_embed_windows_with` for every scope (0: semantic search off): a store embedded
    before turns had windows gets them on `hermes sessions reindex`."""
    from hermes.memory import embeddings

    embedder = _embedder(settings, store)
    if embedder is None or store.vectors is None:
        return 0
    try:
        return _embed_windows_with(store, embedder, None)
    except embeddings.EmbeddingsUnavailableError as exc:
        fail(f"{exc}; what was embedded before stays", 1)


def _embed_sentences(settings: Settings, store: Store) -> int:
    """Give messages embedded before sentences got vectors of their own their sentences'
    vectors (`semantic.embed_sentences`); how many were given some (0: semantic search off)."""
    embedder = _embedder(settings, store)
    if embedder is None or store.vectors is None:
        return 0
    from hermes.recall.semantic import embed_sentences

    starts = store.vectors.newest_starts(settings.search.max_vectors)
    with progress("looking for long messages embedded as one vector") as advance:
        _, upgraded = embed_sentences(store, embedder, starts=starts, progress=advance)
    return upgraded


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d %H:%M") if ts else "-"


@app.command("list")
def list_cmd(
    user: str | None = UserOption,
    limit: int = typer.Option(50, "--limit", min=1, max=10_000),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """List sessions, most recently active first."""
    scope = scope_or_exit(user)
    store = open_store(settings_or_exit())
    try:
        sessions = store.list_sessions(scope, limit=limit)
    finally:
        store.close()
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {
                        "id": s.id,
                        "title": s.title,
                        "source": s.source,
                        "started_at": s.started_at,
                        "updated_at": s.updated_at,
                        "message_count": s.message_count,
                        "input_tokens": s.input_tokens,
                        "output_tokens": s.output_tokens,
                    }
                    for s in sessions
                ]
            )
        )
        return
    if not sessions:
        typer.echo("No sessions yet.")
        return
    for s in sessions:
        typer.echo(
            f"{s.id:<40} {s.source:<8} {_when(s.updated_at)}  {s.message_count:>5} msgs  {s.title or ''}"
        )


@app.command("show")
def show_cmd(
    session_id: str = typer.Argument(..., help="Session id."),
    user: str | None = UserOption,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Print one session's transcript."""
    scope = scope_or_exit(user)
    store = open_store(settings_or_exit())
    try:
        session = store.get_session(scope, session_id)
        if session is None:
            fail(f"no session {session_id!r} in this scope; `hermes sessions list` shows them", 1)
        messages = store.get_messages(scope, session_id)
        markers = store.compression_markers(scope, session_id)
        hidden = store.hidden_ranges(scope, session_id)
    finally:
        store.close()
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "id": session.id,
                    "messages": [
                        {
                            "index": m.index,
                            "role": m.role,
                            "content": m.content,
                            "timestamp": m.timestamp,
                            "tool_calls": m.tool_calls,
                            "tool_name": m.tool_name,
                        }
                        for m in messages
                    ],
                    "compressions": markers,
                }
            )
        )
        return
    typer.echo(
        f"# {session.id}  ({session.source}, {session.message_count} messages, "
        f"{session.input_tokens} in / {session.output_tokens} out tokens)"
    )
    marks = {m["upto_index"]: m for m in markers}
    for m in messages:
        label = m.role if not m.tool_name else f"tool:{m.tool_name}"
        body = m.content or ""
        if m.tool_calls:
            body += " " + ", ".join(
                c["function"]["name"] + "(" + c["function"]["arguments"] + ")" for c in m.tool_calls
            )
        if any(a <= m.index < b for a, b in hidden):
            label += " (undone: not in the prompt)"
        typer.echo(f"[{m.index}] {_when(m.timestamp)} {label}: {body}")
        if m.index + 1 in marks:
            mark = marks[m.index + 1]
            typer.echo(
                f"---- compressed: messages before #{mark['upto_index']} are summarised in the prompt "
                f"({_when(mark['created_at'])}) ----"
            )


@app.command("search")
def search_cmd(
    query: str | None = typer.Argument(None, help="Words to search for."),
    user: str | None = UserOption,
    limit: int = typer.Option(10, "--limit", min=1, max=100, help="Hits to return."),
    batch: Path | None = typer.Option(
        None,
        "--batch",
        help='JSONL file (or - for stdin), one {"query", "limit"?} per line; '
        "prints one JSON result line per query, in order.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Search past messages (ranked, best first)."""
    from hermes.memory.embeddings import vector_name
    from hermes.recall.component import Recall
    from hermes.recall.search import (
        BatchFormatError,
        parse_batch,
        timed_search,
        warm_up,
    )

    if (query is None) == (batch is None):
        fail("give either a QUERY or --batch FILE", 2)
    scope = scope_or_exit(user)
    queries = [(query or "", limit)]
    if batch is not None:
        queries = parse_file_or_exit(
            batch, lambda lines: parse_batch(lines, limit), BatchFormatError, "nothing was searched"
        )
    settings = settings_or_exit()
    store = open_store(settings)
    try:
        _embed(settings, store, scope, most=SEARCH_EMBED_MAX)
        # no vectors in this scope (yet): no model to load (seconds) for nothing
        vectors = store.vectors
        has_vectors = vectors is not None and vectors.count(vector_name(settings), scope) > 0
        semantic = Recall(settings, store).semantic(wait=True) if has_vectors else None
        warm_up(store, scope, semantic)  # like loading the model: no one search's time
        for text, k in queries:
            result = timed_search(store, scope, text, k, semantic)
            if as_json or batch is not None:
                typer.echo(json.dumps(result, ensure_ascii=False))
                continue
            if not result["hits"]:
                typer.echo("No matches.")
            for hit in result["hits"]:
                typer.echo(
                    f"{hit['score']:.3f}  {hit['session_id']} #{hit['message_index']} "
                    f"{hit['role']}: {' '.join(hit['snippet'].split())}"
                )
    finally:
        store.close()


@app.command("export")
def export_cmd(
    output: Path | None = typer.Argument(None, help="File to write (default: stdout)."),
    session: list[str] | None = typer.Option(None, "--session", help="Only these session ids."),
    user: str | None = UserOption,
) -> None:
    """Export sessions as JSONL, one session per line."""
    from hermes.store.transfer import export_sessions

    scope = scope_or_exit(user)
    store = open_store(settings_or_exit())
    try:
        lines = export_sessions(store, scope, session or None)
        with progress("exporting sessions", len(session) if session else None) as advance:
            if output is None:
                for line in lines:
                    sys.stdout.write(line + "\n")
                    advance(1)
            else:
                with output.open("w", encoding="utf-8") as fh:
                    for line in lines:
                        fh.write(line + "\n")
                        advance(1)
    finally:
        store.close()


@app.command("import")
def import_cmd(
    sources: list[Path] = typer.Argument(
        ..., help="JSONL files, one session per line ('-' for stdin).", show_default=False
    ),
    user: str | None = UserOption,
    embed: bool = typer.Option(
        True, "--embed/--no-embed", help="Add the messages to the semantic index now."
    ),
) -> None:
    """Import sessions from JSONL files, in order; sessions whose id already exists are
    skipped. A malformed file imports nothing of itself and stops there. Messages are
    embedded once, after the last file: a scope's newest messages are the ones searched by
    meaning, and importing files one command at a time would embed each file's in turn."""
    from hermes.store.transfer import ImportFormatError, ImportReport, import_sessions, parse_jsonl

    scope = scope_or_exit(user)

    def parsed(n: int) -> list[ImportedSession]:
        consequence = (
            f"nothing of it was imported; the {n} file(s) before it were"
            if n
            else "nothing was imported"
        )
        return parse_file_or_exit(sources[n], parse_jsonl, ImportFormatError, consequence)

    first = parsed(0)  # a malformed first file: no store is even opened
    settings = settings_or_exit()
    if embed:
        _semantic_or_exit(settings)  # say so before importing, not after
    store = open_store(settings)
    total = ImportReport()
    try:
        for n in range(len(sources)):
            sessions = first if n == 0 else parsed(n)
            first = []  # one file's sessions in memory at a time
            with progress("importing sessions", len(sessions)) as advance:
                report = import_sessions(store, scope, sessions, advance)
            total.imported += report.imported
            total.skipped += report.skipped
            total.messages += report.messages
        embedded = _embed(settings, store, scope) if embed else 0
    finally:
        store.close()
    typer.echo(
        f"imported {total.imported} session(s) ({total.messages} messages), "
        f"skipped {total.skipped} already present"
    )
    if embedded:
        typer.echo(f"embedded {embedded:,} messages for semantic search")


@app.command("reindex")
def reindex_cmd(
    check: bool = typer.Option(False, "--check", help="Only verify the index; exit 1 if broken."),
) -> None:
    """Verify the full-text search index and rebuild it from the stored messages."""
    settings = settings_or_exit()
    store = open_store(settings)
    try:
        health = store.search.check_search_index()
        if check:
            if not health.ok:
                fail(health.detail, 1)
            typer.echo(f"search index ok ({health.rows:,} messages indexed)")
            return
        with progress("rebuilding the search index"):
            rows = store.search.rebuild_search_index()
        after = store.search.check_search_index()
        embedded = _embed(settings, store, None) if after.ok else 0
        sentences = _embed_sentences(settings, store) if after.ok else 0
        windows = _embed_windows(settings, store) if after.ok else 0
    finally:
        store.close()
    if not after.ok:
        fail(after.detail, 1)
    before = "was ok" if health.ok else "was damaged"
    typer.echo(f"search index rebuilt ({rows:,} messages indexed; it {before})")
    if embedded:
        typer.echo(f"embedded {embedded:,} messages for semantic search")
    if sentences:
        typer.echo(f"embedded the sentences of {sentences:,} older long messages on their own")
    if windows:
        typer.echo(f"embedded {windows:,} turns with the turns before them")


@app.command("delete")
def delete_cmd(
    session_id: str = typer.Argument(...),
    user: str | None = UserOption,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Delete one session and its messages."""
    scope = scope_or_exit(user)
    if not yes and not typer.confirm(f"Delete session {session_id!r}?"):
        raise typer.Exit(1)
    store = open_store(settings_or_exit())
    try:
        removed = store.delete_session(scope, session_id)
    finally:
        store.close()
    if not removed:
        fail(f"no session {session_id!r} in this scope", 1)
    typer.echo(f"deleted {session_id}")
