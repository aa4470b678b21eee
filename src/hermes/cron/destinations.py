"""Where a webhook delivery may go: public addresses only, unless the operator allows private ones.

Anyone who can create a job (every end user of a multi-user server, over /api/jobs) chooses its
webhook URL, and the server makes that request from inside its own network. Without a check,
a job could reach the cloud metadata service (169.254.169.254), an admin port on localhost, or
any host on the private network. So the host is resolved here, every address it resolves to
must be public, and the request is then sent to the address that was checked (Host header and
TLS name kept), so a DNS answer that changes between the check and the connect cannot slip a
private address in.

`cron.webhook_allow_private: true` lifts the check (a single-user install delivering to a
service on its own LAN); requests are still pinned to the resolved address.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class DestinationRefused(Exception):
    """The webhook URL may not be called; the message says why and how to allow it."""


@dataclass(frozen=True)
class PinnedDestination:
    """A checked webhook target: send to one of `urls` (the host replaced by each checked
    address, in resolver order, to try in turn when one refuses the connection) with
    `host_header` and, for HTTPS, `sni_hostname` as the name the certificate must match."""

    urls: tuple[str, ...]
    host_header: str
    sni_hostname: str

    def request_options(self) -> dict[str, object]:
        """Keyword arguments for `httpx.AsyncClient.post` that keep the original name."""
        return {
            "headers": {"Host": self.host_header},
            "extensions": {"sni_hostname": self.sni_hostname},
        }


def why_not_public(address: IPAddress) -> str | None:
    """None for a public unicast address, else what kind of address it is."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_unspecified:
        return "the unspecified address (it reaches this machine)"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (cloud metadata services live there)"
    if address.is_private:
        return "a private-network address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_reserved or not address.is_global:
        return "not a public address"
    return None


async def pin_destination(url: str, *, allow_private: bool) -> PinnedDestination:
    """Resolve the URL's host and check every address; raises `DestinationRefused`."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise DestinationRefused(f"{url!r} is not a valid URL: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise DestinationRefused(f"{url!r} is not an http(s) URL with a host")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            parsed.host, port, type=socket.SOCK_STREAM
        )
    except (socket.gaierror, UnicodeError) as exc:
        raise DestinationRefused(f"the host {parsed.host!r} could not be resolved: {exc}") from None
    addresses = list(
        dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos)
    )
    if not addresses:
        raise DestinationRefused(f"the host {parsed.host!r} has no addresses")
    if not allow_private:
        for address in addresses:
            reason = why_not_public(address)
            if reason:
                raise DestinationRefused(
                    f"{parsed.host} resolves to {address}, {reason}; webhooks may only reach "
                    "public addresses unless cron.webhook_allow_private is true in config.yaml"
                )
    return PinnedDestination(
        urls=tuple(str(parsed.copy_with(host=str(address))) for address in addresses),
        host_header=parsed.netloc.decode("ascii"),
        sni_hostname=parsed.host,
    )
