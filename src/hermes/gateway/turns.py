"""Run one agent turn for a chat message: whose scope, which session, which tools, the typing
indicator while it works, and the answer sent back where the message came from."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from hermes.agent.invocations import Invocation, SlashInvocations
from hermes.agent.turn import TurnObserver, TurnRequest
from hermes.gateway.approvals import ChatApprover
from hermes.gateway.base import AdapterError, Attachment, Inbound
from hermes.gateway.chats import ChatWorker
from hermes.gateway.live import LiveReply
from hermes.gateway.speech import Speaker, SpeechUnavailable
from hermes.gateway.vision import has_photos, seen
from hermes.gateway.voice import (
    NO_STT,
    RecordingTooLong,
    Transcriber,
    TranscriptionUnavailable,
    spoken,
)

if TYPE_CHECKING:
    from hermes.gateway.runner import Gateway

log = logging.getLogger(__name__)

TYPING_EVERY = 4.0  # Telegram shows "typing…" for about 5 s per chat action
TYPING_AFTER = 0.5


class _Partial(TurnObserver):
    """Streams the model's text so that an interrupted turn keeps what it had said; counts it
    on the worker (for /status) and passes the turn's progress on to a live reply, if any."""

    def __init__(self, worker: ChatWorker, live: LiveReply | None) -> None:
        self.worker = worker
        self.live = live

    def on_delta(self, text: str) -> None:
        self.worker.streamed += len(text)
        if self.live is not None:
            self.live.on_delta(text)

    def on_tool_start(self, call_id: str, name: str) -> None:
        if self.live is not None:
            self.live.on_tool_start(call_id, name)

    def on_tool_end(self, call_id: str, name: str, ok: bool) -> None:
        if self.live is not None:
            self.live.on_tool_end(call_id, name, ok)


def describe_attachments(attachments: tuple[Attachment, ...]) -> str:
    lines = []
    for a in attachments:
        size = f", {a.size} bytes" if a.size is not None else ""
        mime = f", {a.mime}" if a.mime else ""
        lines.append(f"[The user sent a {a.kind} {a.name!r}{mime}{size}, saved at {a.path}]")
    return "\n".join(lines)


def user_text(msg: Inbound, text: str | None = None) -> str:
    text = msg.text.strip() if text is None else text
    parts = [text] if text else []
    if msg.attachments:
        parts.append(describe_attachments(msg.attachments))
    return "\n\n".join(parts) or "(empty message)"


class TurnMaker:
    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway
        self._typing_tasks: set[asyncio.Task[None]] = set()
        self.transcriber = Transcriber(gateway.settings)
        self._told_no_stt: set[str] = set()  # chats told that voice notes cannot be heard
        self.speaker = Speaker(gateway.settings)

    async def run(self, msg: Inbound, steering: asyncio.Queue[str], worker: ChatWorker) -> None:
        """The worker's turn runner: never raises except for cancellation."""
        gw = self.gw
        scope = worker.scope

        async def say(text: str) -> None:
            await gw.say(msg, text)

        heard_voice = bool(spoken(msg.attachments))
        msg = await self._heard(msg)
        limits = await gw.agent.vision.limits() if has_photos(msg) else None
        msg, images = await seen(msg, limits)
        invocation = await self._invocation(msg)
        session_id = await asyncio.to_thread(gw.sessions.current, worker.scope, worker.key)
        request = TurnRequest(
            user_message=user_text(msg, invocation.user_message if invocation else None),
            system_extra=invocation.system_extra if invocation else None,
            session_id=session_id,
            scope=scope,
            source=msg.platform,
            # owners get every tool, other people the end-user set (hermes.tools.toolsets)
            toolset=gw.agent.toolset_for(scope, msg.platform),
            approver=ChatApprover(worker, say, msg.identity, gw.settings.gateway.approval_timeout),
            steering=steering,
            images=images,
        )
        done = asyncio.Event()
        typing = asyncio.get_running_loop().create_task(self._typing(msg, done))
        self._typing_tasks.add(typing)
        typing.add_done_callback(self._typing_tasks.discard)
        worker.streamed = 0
        live = self._live_reply(msg)
        try:
            result = await gw.agent.run_turn(request, _Partial(worker, live))
        except BaseException as exc:
            if live is not None:
                await asyncio.shield(live.abandon())
            if not isinstance(exc, Exception):
                raise
            log.warning("gateway turn for %s failed: %s", msg.session_key, exc)
            await say(f"⚠️ Sorry, I could not answer that: {exc}")
            return
        finally:
            done.set()  # an indicator request in flight finishes on its own
        worker.answered = True
        if not (live is not None and await self._finish_live(live, msg, result.content)):
            if result.content.strip():
                await gw.say(msg, result.content, reply=True)
        if result.content.strip() and self.speaker.wanted(heard_voice):
            await self._speak(msg, result.content)

    async def _speak(self, msg: Inbound, text: str) -> None:
        """The answer also as a voice message (`tts.mode`), after the text: never raises."""
        adapter = self.gw.adapters.get(msg.platform)
        if adapter is None or not adapter.voice_replies:
            return
        try:
            audio = await self.speaker.speak(text)
            await adapter.send_voice(msg.chat, audio, thread=msg.thread, reply_to=msg.message_id)
        except (SpeechUnavailable, AdapterError) as exc:
            log.warning("gateway: no spoken reply for %s: %s", msg.session_key, exc)
            return
        except Exception as exc:  # the text is out already; audio is only an extra
            log.warning("gateway: the spoken reply for %s failed: %r", msg.session_key, exc)
            return
        self.gw.count_out(msg.platform)

    def _live_reply(self, msg: Inbound) -> LiveReply | None:
        adapter = self.gw.adapters.get(msg.platform)
        if adapter is None or not adapter.live_edits or not self.gw.settings.gateway.streaming:
            return None
        return LiveReply(adapter, msg, timing=self.gw.live_timing)

    async def _finish_live(self, live: LiveReply, msg: Inbound, content: str) -> bool:
        """The final text into the live message; False when nothing was shown live (the answer
        then goes out whole) or when the platform refused (the answer is sent anew)."""
        try:
            shown = await live.finish(content)
        except Exception as exc:
            log.warning(
                "gateway: the live answer for %s could not be finished: %s", msg.session_key, exc
            )
            return False
        if shown:
            self.gw.count_out(msg.platform)
        return shown

    async def _heard(self, msg: Inbound) -> Inbound:
        """Voice notes as text: the transcript joins the message (and is what gets stored)."""
        recordings = spoken(msg.attachments)
        if not recordings:
            return msg
        heard: list[str] = []
        for recording in recordings:
            try:
                heard.append(await self.transcriber.transcribe(recording.path))
            except RecordingTooLong as exc:  # this note only: said every time, never "no STT"
                await self.gw.say(msg, str(exc))
                return msg
            except (TranscriptionUnavailable, OSError) as exc:
                log.warning("could not transcribe a voice note from %s: %s", msg.session_key, exc)
                if msg.session_key not in self._told_no_stt:
                    self._told_no_stt.add(msg.session_key)
                    await self.gw.say(msg, NO_STT)
                return msg
        text = "\n\n".join(t for t in [msg.text.strip(), *heard] if t)
        rest = tuple(a for a in msg.attachments if a not in recordings)
        return replace(msg, text=text, attachments=rest)

    async def _invocation(self, msg: Inbound) -> Invocation | None:
        """`/<skill> text`: the turn runs with that skill's instructions (as in `hermes chat`)."""
        text = msg.text.strip()
        provider = self.gw.runtime.services.find(SlashInvocations)
        if provider is None or not text.startswith("/"):
            return None
        try:
            return await asyncio.to_thread(provider.expand, text, platform=msg.platform)
        except Exception as exc:  # an unreadable skill must not cost the user an answer
            log.warning("could not expand %r: %s", text.split()[0], exc)
            return None

    async def close(self) -> None:
        for task in list(self._typing_tasks):
            task.cancel()
        await asyncio.gather(*self._typing_tasks, return_exceptions=True)

    async def _typing(self, msg: Inbound, done: asyncio.Event) -> None:
        """Show "typing…" while a turn works, from `TYPING_AFTER` seconds on (a quick answer
        needs no indicator, and that saves two platform calls per message under load)."""
        adapter = self.gw.adapters.get(msg.platform)
        delay = TYPING_AFTER
        while adapter is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), delay)
            if done.is_set():
                return
            try:
                await adapter.typing(msg.chat, msg.thread)
            except Exception as exc:  # cosmetic: never disturb the turn
                log.debug("typing indicator failed: %s", exc)
            delay = TYPING_EVERY
