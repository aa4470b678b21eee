"""Several replicas behind a load balancer: turns/s and p50/p99 through nginx with 1, 2 and 3
`hermes serve` replicas on one PostgreSQL, at 32 concurrent sessions. Prints a table:

    python bench/scale.py                  # 1, 2 and 3 replicas, 32 sessions x 12 turns
    python bench/scale.py --quick          # 3 turns a session, a smoke test
    python bench/scale.py --replicas 1,3   # only those counts

The topology is the deployment test's (tests/deploy): the real nginx (`tests.standins.nginx`:
its own process, sessions hashed to a replica by X-Hermes-Session-Id) in front of real
`hermes serve` subprocesses with their own homes, sharing only a PostgreSQL database made
for each row (dropped after). The model is `hermes.testing.fake_model` answering at once, so
the figures are Hermes', nginx's and PostgreSQL's own cost. Words search at 1M messages on
PostgreSQL is `bench/search_pg.py`.

On 2 shared cores more replicas cannot add throughput: they compete with each other, nginx,
the client and PostgreSQL for the same cores. See docs/scale.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import aiohttp
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import body, hermes_serve  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))  # tests/standins: the nginx helper the deployment test uses

from tests.standins.nginx import Nginx, find_nginx  # noqa: E402

from hermes.testing.fake_model import FakeModel, Text  # noqa: E402

ADMIN = os.environ.get("HERMES_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
WORDS = [
    "kettle garden invoice python deploy puppy biscuit marathon oslo tulip green tea "
    "meeting budget quarterly server database replica backup restore migrate schema "
    "holiday flight hotel booking refund receipt printer network router firewall"
].pop().split()


def create_db() -> str:
    name = f"hermes_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name


def drop_db(name: str) -> None:
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def url_of(name: str) -> str:
    return ADMIN.rsplit("/", 1)[0] + "/" + name


async def turns(
    http: aiohttp.ClientSession, bases: list[str], sessions: int, each: int
) -> tuple[float, float, float]:
    """(turns/s, p50 ms, p99 ms) for `sessions` concurrent sessions of `each` turns."""
    latencies: list[float] = []
    run = uuid.uuid4().hex[:6]

    async def session(n: int) -> None:
        base = bases[n % len(bases)]
        for t in range(each):
            started = time.perf_counter()
            async with http.post(
                f"{base}/v1/chat/completions",
                data=body(f"turn {t} of session {n}"),
                headers={"Content-Type": "application/json", "X-Hermes-Session-Id": f"{run}-{n}"},
            ) as r:
                await r.read()
                if r.status != 200:
                    raise SystemExit(f"turn failed with {r.status}")
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(session(n) for n in range(sessions)))
    wall = time.perf_counter() - started
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return len(latencies) / wall, statistics.median(latencies) * 1000, p99 * 1000


async def throughput(replicas: int, sessions: int, each: int) -> tuple[float, float, float]:
    """nginx in front of `replicas` `hermes serve` processes on a fresh PostgreSQL database."""
    db = create_db()
    try:
        with FakeModel() as model, tempfile.TemporaryDirectory() as tmp:
            model.default = lambda _body: Text("ok")
            os.environ["HERMES_DATABASE_URL"] = url_of(db)
            async with aiohttp.ClientSession() as http, AsyncExitStack() as stack:
                upstreams = []
                for n in range(replicas):
                    home = Path(tmp) / f"replica-{n}"
                    home.mkdir()
                    (home / "config.yaml").write_text("memory:\n  review_interval: 0\n")
                    _, base, _ = await stack.enter_async_context(
                        hermes_serve(home, model.base_url, http)
                    )
                    upstreams.append(base.removeprefix("http://"))
                (Path(tmp) / "nginx").mkdir()
                lb = stack.enter_context(Nginx(Path(tmp) / "nginx", upstreams))
                await turns(http, [lb.base_url], 8, 2)  # warm up every replica
                return await turns(http, [lb.base_url], sessions, each)
    finally:
        os.environ.pop("HERMES_DATABASE_URL", None)
        drop_db(db)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--replicas", default="1,2,3", help="replica counts to measure")
    parser.add_argument("--sessions", type=int, default=32)
    args = parser.parse_args()
    if find_nginx() is None:
        raise SystemExit("bench/scale.py needs nginx (Debian: apt-get install nginx)")
    each = 3 if args.quick else 12
    print(f"nginx + N replicas + PostgreSQL: {args.sessions} concurrent sessions x {each} turns")
    print(f"{'replicas':>8}{'turns/s':>10}{'p50 ms':>9}{'p99 ms':>9}")
    for replicas in (int(n) for n in args.replicas.split(",")):
        rate, p50, p99 = await throughput(replicas, args.sessions, each)
        print(f"{replicas:>8}{rate:>10.1f}{p50:>9.1f}{p99:>9.1f}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
