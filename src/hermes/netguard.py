"""Where the server may send a request on someone's behalf: public addresses only, by default.

Anyone who can create a job or ask the agent to fetch a page chooses a URL, and the server
makes that request from inside its own network. Without a check, a URL could reach the cloud
metadata service (169.254.169.254), an admin port on localhost, or any host on the private
network. So the host is resolved here, every address it resolves to must be public, and the
request is then sent to the address that was checked (Host header and TLS name kept), so a DNS
answer that changes between the check and the connect cannot slip a private address in.

IPv6 can carry an IPv4 address inside it (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible
`::a.b.c.d`, 6to4 `2002:AABB:CCDD::`, NAT64 `64:ff9b::a.b.c.d` and `64:ff9b:1::/48`, Teredo
`2001::/32`); those are unwrapped and the IPv4 address inside is judged as well, because a
router or translator on the path delivers such a packet to that IPv4 host.

Used by cron's webhook delivery and the web tools; each caller names the setting that lifts
the check in `allow_setting`, so the refusal tells the operator what to change.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes.errors import HermesError

if TYPE_CHECKING:
    pass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


class DestinationRefused(HermesError):
    """The URL may not be called; the message says why and how to allow it."""


@dataclass(frozen=True)
class PinnedDestination:
    """A checked target: send to one of `urls` (the host replaced by each checked address, in
    resolver order, to try in turn when one refuses the connection) with `host_header` and,
    for HTTPS, `sni_hostname` as the name the certificate must match."""

    urls: tuple[str, ...]
    host_header: str
    sni_hostname: str

    def request_options(self) -> dict[str, object]:
        """Keyword arguments for `httpx.AsyncClient.request` that keep the original name."""
        return {
            "headers": {"Host": self.host_header},
            "extensions": {"sni_hostname": self.sni_hostname},
        }


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, 6to4, NAT64, Teredo)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]  # the client; the server part is a public relay
    value = int(address)
    if address in _NAT64_WELL_KNOWN or address in _NAT64_LOCAL:
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if address in _IPV4_COMPATIBLE and value > 1:  # `::` and `::1` are themselves
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return None


def _classify(address: IPAddress) -> str | None:
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


def why_not_public(address: IPAddress) -> str | None:
    """None for a public unicast address, else what kind of address it is (after unwrapping
    any IPv4 address embedded in an IPv6 one)."""
    inner = embedded_ipv4(address)
    if inner is not None:
        reason = _classify(inner)
        if reason:
            return f"{reason} ({inner} embedded in {address})"
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            return None
    if address in _SIX_TO_FOUR or address in _NAT64_WELL_KNOWN or address in _NAT64_LOCAL:
        return None  # the wrapped IPv4 address is public; Python calls these ranges non-global
    return _classify(address)


def parse_address(text: str) -> IPAddress:
    """An address as a resolver returns it (IPv6 zone ids such as `%eth0` dropped)."""
    return ipaddress.ip_address(text.split("%")[0])


async def pin_destination(
    url: str, *, allow_private: bool, allow_setting: str = "cron.webhook_allow_private"
) -> PinnedDestination:
    """Resolve the URL's host and check every address; raises `DestinationRefused`."""
    import httpx  # here, not at import: it pulls rich and click (cold start)

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
    addresses = list(dict.fromkeys(parse_address(str(info[4][0])) for info in infos))
    if not addresses:
        raise DestinationRefused(f"the host {parsed.host!r} has no addresses")
    if not allow_private:
        for address in addresses:
            reason = why_not_public(address)
            if reason:
                raise DestinationRefused(
                    f"{parsed.host} resolves to {address}, {reason}; only public addresses "
                    f"may be reached unless {allow_setting} is true in config.yaml"
                )
    return PinnedDestination(
        urls=tuple(str(parsed.copy_with(host=str(address))) for address in addresses),
        host_header=parsed.netloc.decode("ascii"),
        sni_hostname=parsed.host,
    )
