"""The platform's own addresses: which (address, port) a connection would reach this platform on."""

from __future__ import annotations

from typing import Any

import pytest

from osbp.backend.listening import OwnAddresses, ip_of, resolve


def _own(*bound: tuple[Any, ...]) -> OwnAddresses:
    own = OwnAddresses()
    for sockname in bound:
        own.add(sockname)
    return own


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "::ffff:127.0.0.1", "0.0.0.0", "::"],  # noqa: S104
)
def test_every_loopback_and_unspecified_address_on_the_bound_port_is_the_platform(address):
    """Platform choice (fail closed): on its port, any loopback alias or unspecified address is it."""
    assert _own(("127.0.0.1", 8400)).includes(address, 8400) is True


def test_another_port_or_a_foreign_address_is_not_the_platform():
    """Platform choice: a receiver on another port, or another host, is not the platform."""
    own = _own(("127.0.0.1", 8400))
    assert (own.includes("127.0.0.1", 8401), own.includes("192.0.2.10", 8400)) == (False, False)


def test_bound_to_the_unspecified_address_only_this_hosts_own_addresses_are_the_platform():
    """Platform choice: a platform on 0.0.0.0 is reached on every address of this host, and only those."""
    own = _own(("0.0.0.0", 8400), ("::", 9400))  # noqa: S104  recorded socket names, nothing is bound
    assert own.includes("127.0.0.1", 8400) is True
    assert own.includes("192.0.2.10", 8400) is False  # TEST-NET-1: never an address of this host
    assert own.includes("::1", 9400) is True
    assert own.includes("127.0.0.1", 8401) is False


def test_the_recorded_address_is_the_socket_name_an_ipv4_mapped_one_included():
    """RFC 4291 §2.5.5.2: an IPv4-mapped IPv6 socket name is the IPv4 address it stands for."""
    own = _own(("::ffff:127.0.0.1", 8400, 0, 0))
    assert own.bound == frozenset({(ip_of("127.0.0.1"), 8400)})


def test_a_name_resolves_to_every_address_it_names_and_an_unknown_one_to_none():
    """Platform choice: `localhost` is checked on each of its addresses; an unknown name reaches nothing."""
    assert ip_of("127.0.0.1") in resolve("localhost", 80)
    assert resolve("no-such-host.invalid", 80) == []
    assert resolve("[::ffff:7f00:1]", 80) == [ip_of("127.0.0.1")]
