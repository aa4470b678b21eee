"""Voice notes: a recording from a chat becomes text at an OpenAI-compatible
`/v1/audio/transcriptions` endpoint (`stt.*`; the model endpoint by default), and the turn runs
on that text, so the transcript is what is stored and what `session_search` finds.

When no endpoint transcribes (none configured, or the model server has no such route), the
chat is told once, in a sentence that names the setting, and the voice note reaches the model
as a described file, as any other attachment does.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from hermes import tls
from hermes.errors import HermesError
from hermes.gateway.base import Attachment

if TYPE_CHECKING:
    from pydantic import SecretStr

    from hermes.config.settings import Settings

log = logging.getLogger(__name__)

SPOKEN = frozenset({"voice", "audio"})
NO_STT = (
    "🎤 I can't listen to voice notes here: no speech-to-text endpoint answers. Set `stt.base_url` "
    "(and `stt.model`) to an OpenAI-compatible /v1/audio/transcriptions server, e.g. a "
    "faster-whisper or whisper.cpp server, or OpenAI. Until then, please type."
)


class TranscriptionUnavailable(HermesError):
    """No endpoint could turn speech into text; the message says why (for the log)."""


class RecordingTooLong(TranscriptionUnavailable):
    """This recording is over `stt.max_bytes`: the endpoint may be fine, so the chat is told
    about this voice note, not that nothing transcribes; the message is the sentence to send."""


def too_long(size: int, limit: int) -> str:
    return (
        f"🎤 That voice note is too long for me to transcribe ({_size(size)}; "
        f"`stt.max_bytes` is {_size(limit)}). Please send a shorter one, or type."
    )


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1_000_000 else f"{n / 1e3:.0f} KB"


def audio_endpoint(
    base_url: str | None, api_key: SecretStr | None, settings: Settings
) -> tuple[str | None, str]:
    """The endpoint an audio route (speech to text, text to speech) is called at and its key:
    its own, else the model endpoint's; the model's key goes only to the model's endpoint."""
    model = settings.model
    url = base_url or model.base_url
    key = api_key or (model.api_key if url == model.base_url else None)
    return url, key.get_secret_value() if key else "not-needed"


class Transcriber:
    """Turns recordings into text through the OpenAI SDK's `audio.transcriptions`."""

    def __init__(self, settings: Settings) -> None:
        stt, model = settings.stt, settings.model
        self.base_url, self._api_key = audio_endpoint(stt.base_url, stt.api_key, settings)
        self.model = stt.model
        self.max_bytes = stt.max_bytes
        self.timeout = model.timeout

    async def transcribe(self, path: Path) -> str:
        if not self.base_url:
            raise TranscriptionUnavailable("no stt.base_url and no model.base_url")
        size = (await asyncio.to_thread(path.stat)).st_size
        if size > self.max_bytes:
            raise RecordingTooLong(too_long(size, self.max_bytes))
        data = await asyncio.to_thread(path.read_bytes)
        import openai

        client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self._api_key,
            timeout=self.timeout,
            max_retries=1,
            http_client=openai.DefaultAsyncHttpxClient(verify=tls.openai_context()),
        )
        try:
            result = await client.audio.transcriptions.create(
                model=self.model, file=(path.name, data)
            )
        except openai.APIError as exc:
            raise TranscriptionUnavailable(f"{self.base_url}: {exc}") from None
        finally:
            await client.close()
        return str(getattr(result, "text", "") or "").strip()


def spoken(attachments: tuple[Attachment, ...]) -> list[Attachment]:
    return [a for a in attachments if a.kind in SPOKEN]
