"""Benchmark of what images cost Hermes itself (not the model). One command, prints a table:

    .venv/bin/python bench/images.py            # about ten seconds
    .venv/bin/python bench/images.py --quick    # fewer rounds

In-process, no server or model: the per-request and per-call work Hermes adds when images come.

* parse: `parse_chat_body` of a one-message request, text only vs. with one data-URL PNG of
  1 KB / 1 MB / 4 MB (base64 decode, magic-byte check, hashing to its name);
* store: writing the turn's image files (`save_images`), first time and again (already there);
* replay: `ImageView.for_model` on a 200-message session holding 20 image messages whose
  images are read back from disk for the last `image_turns` (3) user messages, vs. the same
  history without images (the has-marker scan only).

Median of the rounds, milliseconds; the load average is printed beside the figures because the
machine may be shared.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

from hermes.agent.images import ImageView, has_images, save_images
from hermes.models.images import ImageLimits
from hermes.server.openai_compat import parse_chat_body

LIMITS = ImageLimits(max_bytes=8_000_000, per_message=4)


def png_of(size: int) -> bytes:
    """A valid PNG header followed by incompressible bytes, `size` long (the checks read the
    magic bytes; nothing decodes pixels)."""
    head = b"\x89PNG\r\n\x1a\n"
    body = bytearray()
    seed = 1
    while len(body) < size - len(head):
        seed = zlib.crc32(seed.to_bytes(4, "little"))
        body += seed.to_bytes(4, "little")
    return head + bytes(body[: size - len(head)])


def timed(fn: Callable[[], object], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def body(parts: object) -> bytes:
    return json.dumps(
        {"model": "hermes", "messages": [{"role": "user", "content": parts}]}
    ).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    rounds = 5 if parser.parse_args().quick else 25
    rows: list[tuple[str, float]] = []

    def parse(raw: bytes) -> Callable[[], object]:
        return lambda: parse_chat_body(
            raw, default_model="hermes", ignore_client_tools=False, image_limits=LIMITS
        )

    rows.append(("parse: text only", timed(parse(body("what is in this picture?")), rounds)))
    for size, label in ((1_000, "1 KB"), (1_000_000, "1 MB"), (4_000_000, "4 MB")):
        url = "data:image/png;base64," + base64.b64encode(png_of(size)).decode()
        raw = body(
            [
                {"type": "text", "text": "what is in it?"},
                {"type": "image_url", "image_url": {"url": url}},
            ]
        )
        rows.append((f"parse: text + {label} PNG", timed(parse(raw), rounds)))

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        call = parse_chat_body(
            body(
                [
                    {
                        "type": "image_url",
                        "image_url": {
                            "url": "data:image/png;base64,"
                            + base64.b64encode(png_of(1_000_000)).decode()
                        },
                    }
                ]
            ),
            default_model="hermes",
            ignore_client_tools=False,
            image_limits=LIMITS,
        )
        assert call.images is not None
        blobs = list(call.images.blobs.values())
        start = time.perf_counter()
        save_images(home, "default", blobs, 1000)
        rows.append(("store: 1 MB image, first write", (time.perf_counter() - start) * 1000))
        rows.append(
            (
                "store: 1 MB image, already there",
                timed(lambda: save_images(home, "default", blobs, 1000), rounds),
            )
        )

        marker = call.user_message
        history = []
        plain = []
        for i in range(100):
            text = f"message {i}"
            history.append({"role": "user", "content": f"{text}\n{marker}" if i % 5 == 0 else text})
            history.append({"role": "assistant", "content": "ok"})
            plain.append({"role": "user", "content": text})
            plain.append({"role": "assistant", "content": "ok"})
        history[-2]["content"] = f"last\n{marker}"
        view = ImageView(home, "default", 3, {})
        rows.append(
            ("replay: 200 msgs, no images (scan)", timed(lambda: has_images(plain), rounds))
        )
        rows.append(
            (
                "replay: 200 msgs, 21 images, 1 sent",
                timed(lambda: view.for_model(history, True), rounds),
            )
        )
        rows.append(
            (
                "replay: same, model does not see",
                timed(lambda: view.for_model(history, False), rounds),
            )
        )

    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"images: median of {rounds} rounds, ms (load average {load})")
    width = max(len(name) for name, _ in rows)
    for name, ms in rows:
        print(f"  {name:<{width}}  {ms:9.3f}")


if __name__ == "__main__":
    main()
