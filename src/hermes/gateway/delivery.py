"""Deliveries to messaging targets (cron answers, `send_message`): `home`, `<platform>` (its
home chat), `<platform>:<chat>[:<thread>]`, `email:<address>`. A direct send through the live
adapter when `hermes serve` runs one in this process, else through a one-off adapter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes.delivery import DeliveryError, Outbound, split_target
from hermes.gateway.base import AdapterError, PlatformAdapter
from hermes.gateway.platforms import UnknownPlatformError, spec

if TYPE_CHECKING:
    from hermes.runtime import Runtime


@dataclass(frozen=True)
class Target:
    platform: str
    chat: str
    thread: str | None = None


class GatewayDeliverer:
    name = "gateway"

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def accepts(self, target: str) -> bool:
        platform = target.partition(":")[0]
        return target in ("home", "origin") or platform in self.runtime.registry.platforms

    def home(self) -> str | None:
        from hermes.gateway.runner import Gateway

        gateway = self.runtime.services.find(Gateway)
        return gateway.home if gateway is not None else self.runtime.settings.gateway.home

    def resolve(self, target: str) -> Target:
        home = self.home()
        if target in ("home", "origin"):  # no origin chat is recorded: the home chat
            if not home:
                raise DeliveryError(
                    "no home chat is set: send /sethome in the chat that should get these "
                    "messages (or set gateway.home, e.g. telegram:42)"
                )
            target = home
        platform, chat, thread = split_target(target)
        if chat is None:
            home_platform, home_chat, home_thread = split_target(home or "")
            if home_platform != platform or home_chat is None:
                raise DeliveryError(
                    f"{platform!r} has no home chat: send /sethome in a {platform} chat, or "
                    f"deliver to {platform}:<chat id>"
                )
            chat, thread = home_chat, home_thread
        return Target(platform, chat, thread)

    async def deliver(self, target: str, message: Outbound) -> str:
        where = self.resolve(target)
        settings = self.runtime.settings
        try:
            platform = spec(where.platform, self.runtime.registry)
        except UnknownPlatformError as exc:
            raise DeliveryError(str(exc)) from None
        if not platform.configured(settings):
            raise DeliveryError(
                f"{where.platform} is not configured (its credentials are not set); see "
                "`hermes gateway status`"
            )
        text = message.text
        if message.title and message.source == "cron" and where.platform != "email":
            text = f"{message.title}\n\n{text}"
        live = self._live(where.platform)
        adapter = live
        if adapter is None:
            adapter = platform.create(settings)
            share = getattr(adapter, "share_state", None)
            if callable(share):  # a one-off adapter reads what replicas share (a session)
                share(self.runtime.store.documents)
        meta = {"subject": message.title} if message.title else {}  # email: the subject
        try:
            await adapter.send(where.chat, text, thread=where.thread, meta=meta)
        except AdapterError as exc:
            raise DeliveryError(f"{where.platform}: {exc}", retryable=exc.retryable) from None
        except OSError as exc:
            raise DeliveryError(f"{where.platform}: {exc}", retryable=True) from None
        finally:
            if live is None:
                await adapter.disconnect()
        if live is not None:
            self._count(where.platform)
        suffix = f":{where.thread}" if where.thread else ""
        return f"{where.platform}:{where.chat}{suffix}"

    def _live(self, platform: str) -> PlatformAdapter | None:
        from hermes.gateway.runner import Gateway

        gateway = self.runtime.services.find(Gateway)
        return gateway.adapters.get(platform) if gateway is not None else None

    def _count(self, platform: str) -> None:
        from hermes.gateway.runner import Gateway

        gateway = self.runtime.services.find(Gateway)
        if gateway is not None:
            gateway.count_out(platform)
