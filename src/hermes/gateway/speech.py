"""Spoken replies: the answer's text becomes audio at an OpenAI-compatible `/v1/audio/speech`
endpoint (`tts.*`; the model endpoint by default) and goes out as a voice message.

`tts.mode` says when: `off` (default), `voice_in` (a reply to a voice note), `always`. The
text answer is always sent first; speech is an addition, so a failing endpoint or a platform
without voice messages costs the user nothing but the audio (the failure is logged).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Final, Literal

from hermes import tls
from hermes.errors import HermesError
from hermes.gateway.voice import audio_endpoint

if TYPE_CHECKING:
    from hermes.config.settings import Settings

log = logging.getLogger(__name__)

FORMAT: Final[Literal["opus"]] = "opus"
"""Ogg/Opus: what Telegram shows as a voice note (and what WhatsApp plays as one)."""


_LINK = re.compile(r"\[([^\]\n]+)\]\((?:https?://|mailto:)[^)\s]+\)")
_MARKS = re.compile(r"(\*\*|__|\*|`+|~~|^#{1,6}\s+|^>\s?)", re.M)


def spoken_text(markdown: str) -> str:
    """What a voice reads of a Markdown answer: link texts without their URLs, no emphasis
    marks, backticks or heading signs (a voice would read them out)."""
    return _MARKS.sub("", _LINK.sub(r"\1", markdown)).strip()


class SpeechUnavailable(HermesError):
    """No audio could be made for a reply; the message says why (for the log)."""


class Speaker:
    """Turns reply text into audio through the OpenAI SDK's `audio.speech`."""

    def __init__(self, settings: Settings) -> None:
        tts, model = settings.tts, settings.model
        self.mode = tts.mode
        self.base_url, self._api_key = audio_endpoint(tts.base_url, tts.api_key, settings)
        self.model = tts.model
        self.voice = tts.voice
        self.max_chars = tts.max_chars
        self.timeout = model.timeout

    def wanted(self, heard_voice: bool) -> bool:
        return self.mode == "always" or (self.mode == "voice_in" and heard_voice)

    async def speak(self, text: str) -> bytes:
        if not self.base_url:
            raise SpeechUnavailable("no tts.base_url and no model.base_url")
        import openai

        client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self._api_key,
            timeout=self.timeout,
            max_retries=1,
            http_client=openai.DefaultAsyncHttpxClient(verify=tls.openai_context()),
        )
        try:
            response = await client.audio.speech.create(
                model=self.model,
                voice=self.voice,
                input=spoken_text(text)[: self.max_chars],
                response_format=FORMAT,
            )
            data = await response.aread()
        except openai.APIError as exc:
            raise SpeechUnavailable(f"{self.base_url}: {exc}") from None
        finally:
            await client.close()
        if not data:
            raise SpeechUnavailable(f"{self.base_url} answered with no audio")
        return data
