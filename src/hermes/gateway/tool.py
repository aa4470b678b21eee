"""The `send_message` tool: the agent messages a chat on a platform (owner scope only)."""

from __future__ import annotations

from hermes.delivery import Deliverers, DeliveryError, Outbound
from hermes.store.base import DEFAULT_SCOPE
from hermes.tools.registry import ToolContext, ToolError, tool


@tool(name="send_message")
async def send_message(ctx: ToolContext, target: str, message: str) -> dict[str, str]:
    """Send a message to a person or chat on a messaging platform, right now.

    Args:
        target: Where to: 'home' (the owner's home chat), a platform name for its home chat
            ('telegram'), 'telegram:<chat id>[:<topic id>]' or 'email:<address>'.
        message: The text to send (Markdown is fine).
    """
    if ctx.scope != DEFAULT_SCOPE:
        raise ToolError("send_message is only available to the owner of this Hermes")
    if not message.strip():
        raise ToolError("message is empty")
    deliverers = ctx.service(Deliverers)
    found = deliverers.find(target.strip())
    if found is None or target.startswith(("http://", "https://")):
        raise ToolError(
            f"cannot send to {target!r}: use 'home', a platform such as 'telegram', "
            "'telegram:<chat id>' or 'email:<address>'"
        )
    outbound = Outbound(text=message, scope=ctx.scope, source="agent")
    try:
        where = await found.deliver(target.strip(), outbound)
    except DeliveryError as exc:
        raise ToolError(f"not sent: {exc}") from None
    return {"status": "sent", "to": where}
