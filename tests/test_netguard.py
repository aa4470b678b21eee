"""Which destinations the server may call (the SSRF guard), through `pin_destination`."""

from __future__ import annotations

import pytest

from hermes.netguard import DestinationRefused, parse_address, pin_destination, why_not_public


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
        # IPv4 addresses wrapped in IPv6 are unwrapped before the check
        ("http://[2002:7f00:1::]/hook", "loopback"),  # 6to4 of 127.0.0.1
        ("http://[2002:a9fe:a9fe::1]/hook", "link-local"),  # 6to4 of 169.254.169.254
        ("http://[2002:c0a8:1::]/hook", "private-network"),  # 6to4 of 192.168.0.1
        ("http://[64:ff9b::a00:1]/hook", "private-network"),  # NAT64 of 10.0.0.1
        ("http://[64:ff9b::7f00:1]/hook", "loopback"),  # NAT64 of 127.0.0.1
        ("http://[64:ff9b:1::a9fe:a9fe]/hook", "link-local"),  # local-use NAT64
        ("http://[::127.0.0.1]/hook", "loopback"),  # IPv4-compatible
        ("http://[::ffff:169.254.169.254]/hook", "link-local"),
        ("http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/hook", "private-network"),  # Teredo
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


@pytest.mark.parametrize(
    "address", ["2002:5db8:d822::1", "64:ff9b::5db8:d822", "::ffff:93.184.216.34"]
)
def test_wrapped_public_ipv4_counts_as_public(address: str) -> None:
    assert why_not_public(parse_address(address)) is None


async def test_refusal_names_the_callers_setting() -> None:
    with pytest.raises(DestinationRefused, match="web.allow_private"):
        await pin_destination(
            "http://10.0.0.1/", allow_private=False, allow_setting="web.allow_private"
        )
