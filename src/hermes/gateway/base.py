"""The platform contract: what every messaging adapter (Telegram, email, …) provides, and the
one normalized inbound message type the gateway core works with.

An adapter knows its platform's wire protocol and nothing about agents, scopes or sessions;
the core (`hermes.gateway.runner`) knows those and nothing about wire protocols.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hermes.config.fields import CommaList, empty_list
from hermes.errors import HermesError

if TYPE_CHECKING:
    from hermes.config.settings import Settings


@dataclass(frozen=True)
class Attachment:
    """A file the user sent, already saved under HERMES_HOME; the model is told its path."""

    path: Path
    kind: str  # "photo", "document", "attachment", …
    name: str
    mime: str | None = None
    size: int | None = None


@dataclass(frozen=True)
class Inbound:
    """One message from a person, the same shape on every platform.

    `chat` and `thread` name the conversation (the session key is built from them);
    `sender` is the platform's stable user id (`<platform>:<sender>` is the identity the
    allow-lists, `gateway.owner` and pairing use)."""

    platform: str
    chat: str
    sender: str
    text: str
    thread: str | None = None
    sender_name: str | None = None
    message_id: str | None = None
    reply_to: str | None = None
    attachments: tuple[Attachment, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    """Platform details the adapter needs to answer (e.g. an email's subject and references)."""

    @property
    def identity(self) -> str:
        return f"{self.platform}:{self.sender}"

    @property
    def session_key(self) -> str:
        """`<platform>:<chat>[:<thread>]` (SPEC §10)."""
        key = f"{self.platform}:{self.chat}"
        return f"{key}:{self.thread}" if self.thread else key


InboundHandler = Callable[[Inbound], Awaitable[None]]


class AdapterError(HermesError):
    """The platform refused or failed; `retryable` says whether trying again may help: False
    unless the raise says otherwise (the rule in `hermes.errors`), so a network failure or a 5xx
    is raised with `retryable=True`."""


def require_library(module: str, *, platform: str, library: str, extra: str) -> ModuleType:
    """Import a platform's optional library, or say which extra installs it: a platform's
    library is needed only once its credentials are set (`hermes --help` works without)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise AdapterError(
            f"{platform} needs {library}: pip install 'hermes-agent-server[{extra}]'",
            retryable=False,
        ) from None


class PlatformConfig(BaseModel):
    """The base of every platform's `gateway.<name>` model, declared in the platform's module:
    keys other platforms' tools may add are ignored, allow-lists accept `a,b` and numbers."""

    model_config = ConfigDict(extra="ignore")

    allowed_users: CommaList = Field(default_factory=empty_list)


ConfigT = TypeVar("ConfigT", bound=BaseModel)


def read_platform_config(settings: Settings, platform: str, model: type[ConfigT]) -> ConfigT:
    """`gateway.<platform>` validated as `model`; a bad value is a non-retryable error that
    names its key."""
    try:
        return model.model_validate(settings.gateway.platform(platform))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise AdapterError(f"gateway.{platform}.{where}: {first['msg']}", retryable=False) from None


class PlatformAdapter(ABC):
    """One messaging platform. The runner calls `connect`, then `listen` (which returns or
    raises when the connection ends), and `disconnect` on shutdown; it may call `send`,
    `edit` and `typing` at any time after `connect`, also from deliveries."""

    name: str = "platform"
    live_edits: bool = False
    """Whether answers can stream into one message edited in place (`hermes.gateway.live`)."""
    edit_interval: float = 1.0
    """Seconds between edits of one message that the platform accepts without throttling."""
    message_limit: int = 4096
    """Characters in one message; a longer answer continues in the next."""

    @abstractmethod
    async def connect(self) -> None:
        """Authenticate and prepare; raise `AdapterError` (retryable=False for bad credentials)."""

    @abstractmethod
    async def listen(self, handler: InboundHandler) -> None:
        """Receive messages and await `handler` for each, until `disconnect` (return) or a
        failure (raise). The handler never raises and returns quickly (work is queued)."""

    @abstractmethod
    async def disconnect(self) -> None:
        """Stop listening and release connections; safe to call more than once."""

    @abstractmethod
    async def send(
        self,
        chat: str,
        text: str,
        *,
        thread: str | None = None,
        reply_to: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str | None:
        """Send `text` (split as the platform needs); returns the last message id, if any."""

    async def edit(self, chat: str, message_id: str, text: str) -> None:
        """Replace the text of a message this adapter sent; platforms without edits resend."""
        await self.send(chat, text)

    async def typing(self, chat: str, thread: str | None = None) -> None:
        """Show that an answer is being written; a no-op where the platform has no such thing."""
        return None

    voice_replies: bool = False
    """Whether `send_voice` sends audio (spoken replies, `tts.mode`)."""

    async def send_voice(
        self, chat: str, audio: bytes, *, thread: str | None = None, reply_to: str | None = None
    ) -> str | None:
        """Send `audio` (Ogg/Opus) as a voice message; only where `voice_replies` is True."""
        raise AdapterError(f"{self.name} cannot send voice messages", retryable=False)
