"""Which webhook destinations cron may call (the SSRF guard), through `pin_destination`."""

from __future__ import annotations

import pytest

from hermes.cron.destinations import DestinationRefused, pin_destination


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://10.1.2.3:8080/hook", "private-network"),
        ("https://192.168.0.10/hook", "private-network"),
        ("http://127.0.0.1:9/hook", "loopback"),
        ("http://localhost/hook", "loopback"),
        ("http://[::1]/hook", "loopback"),
        ("http://[::ffff:127.0.0.1]/hook", "loopback"),  # IPv4-mapped IPv6 is unwrapped
        ("http://[fe80::1]/hook", "link-local"),
        ("http://0.0.0.0/hook", "unspecified"),
        ("http://100.64.0.1/hook", "not a public address"),  # carrier-grade NAT
        ("http://224.0.0.1/hook", "multicast"),
    ],
)
async def test_non_public_destinations_are_refused(url: str, reason: str) -> None:
    with pytest.raises(DestinationRefused, match=reason) as info:
        await pin_destination(url, allow_private=False)
    assert "cron.webhook_allow_private" in str(info.value)


@pytest.mark.parametrize("url", ["ftp://example.com/x", "http:///no-host", "not a url at all"])
async def test_malformed_destinations_are_refused(url: str) -> None:
    with pytest.raises(DestinationRefused):
        await pin_destination(url, allow_private=True)


async def test_public_address_is_pinned_keeping_port_path_and_query() -> None:
    target = await pin_destination("https://93.184.216.34:8443/hook?k=v", allow_private=False)
    assert target.urls == ("https://93.184.216.34:8443/hook?k=v",)
    assert target.host_header == "93.184.216.34:8443"
    assert target.sni_hostname == "93.184.216.34"


async def test_allowed_private_name_is_pinned_to_its_addresses() -> None:
    target = await pin_destination("http://localhost:8080/hook", allow_private=True)
    assert target.urls and all(u.endswith(":8080/hook") for u in target.urls)
    assert any("127.0.0.1" in u for u in target.urls)
    assert target.host_header == "localhost:8080"
    assert target.request_options() == {
        "headers": {"Host": "localhost:8080"},
        "extensions": {"sni_hostname": "localhost"},
    }
