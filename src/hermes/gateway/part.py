"""The gateway part: the built-in messaging platforms, the `Gateway` component, its `hermes
serve` daemon, the messaging deliverer, the `send_message` tool, `hermes gateway …` and the
`/health` entry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from hermes.plugins import Count, Daemon, Registry

if TYPE_CHECKING:
    from hermes.runtime import Runtime


def _gateway(runtime: Runtime) -> object:
    from hermes.gateway.runner import Gateway

    return Gateway(runtime)


def _daemon(runtime: Runtime) -> Daemon | None:
    from hermes.gateway.runner import Gateway

    gateway = runtime.services.get(Gateway)
    if not gateway.enabled:
        return None
    return Daemon("gateway", gateway.start, gateway.stop)


def _deliverer(runtime: Runtime) -> Any:
    from hermes.gateway.delivery import GatewayDeliverer

    return GatewayDeliverer(runtime)


async def _health(runtime: Runtime) -> dict[str, Any]:
    from hermes.gateway.runner import Gateway

    gateway = runtime.services.find(Gateway)
    if gateway is None or not gateway.enabled:
        return {"status": "off", "adapters": {}}
    adapters = gateway.snapshot()
    down = [
        f"{name} {a['state']}" + (f" ({a['last_error']})" if a["last_error"] else "")
        for name, a in adapters.items()
        if not a["connected"]
    ]
    if not down:
        return {"status": "ok", "adapters": adapters}
    return {  # the reason and fix are what the dashboard's Status shows for this part
        "status": "degraded",
        "adapters": adapters,
        "reason": "not connected: " + "; ".join(down),
        "fix": "check each platform's token and network (hermes gateway status); "
        "adapters reconnect on their own",
    }


def _counts(runtime: Runtime) -> Iterator[Count]:
    """Messages in and out, refusals and restarts per platform, for `/metrics`."""
    from hermes.gateway.runner import Gateway

    gateway = runtime.services.find(Gateway)
    if gateway is None:
        return
    messages = "Gateway messages by platform and direction (in: received, out: sent)."
    for platform, status in sorted(gateway.status.items()):
        yield Count(
            "gateway_messages",
            messages,
            status.messages_in,
            {"platform": platform, "direction": "in"},
        )
        yield Count(
            "gateway_messages",
            messages,
            status.messages_out,
            {"platform": platform, "direction": "out"},
        )
        yield Count(
            "gateway_refused",
            "Messages from people not allowed (no model call), by platform.",
            status.refused,
            {"platform": platform},
        )
        yield Count(
            "gateway_restarts",
            "Times a platform adapter was restarted after failing, by platform.",
            status.restarts,
            {"platform": platform},
        )


def _webhooks() -> Any:
    from hermes.gateway.webhook_routes import router

    return router()


def _commands() -> Any:
    from hermes.gateway.cli import app

    return app


def register(hermes: Registry) -> None:
    from hermes.gateway.platforms import BUILTIN, configured_specs
    from hermes.gateway.tool import send_message

    def _messaging_on(settings: Any) -> bool:
        return bool(configured_specs(settings, hermes))  # plugins' platforms count too

    for name, module in BUILTIN.items():
        hermes.platform(name, module)
    hermes.component(_gateway)
    hermes.daemon(_daemon)
    hermes.deliverer(_deliverer)
    hermes.router(_webhooks)
    hermes.tool(send_message, group="messaging", enabled=_messaging_on)
    hermes.command("gateway", _commands)
    hermes.health("gateway", _health)
    hermes.metrics(_counts)
