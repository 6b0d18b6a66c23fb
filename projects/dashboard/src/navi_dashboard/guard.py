"""Who may talk to the dashboard: a Host allowlist, same-origin websockets, a control token, a rate limit.

Browsers let any web page send requests to ``localhost``, and DNS rebinding makes a foreign page's
requests carry its own name in ``Host`` (``Host: evil.example:8050``, ``Origin:
http://evil.example:8050``). The dashboard can fly the drone, so (``docs/security.md``):

* every request must name an allowed host in ``Host``: ``localhost``, ``127.0.0.1``, ``::1``, the
  address the server is bound to, and any ``--allowed-hosts``;
* a websocket that sends ``Origin`` (every browser does) must come from the page it talks to;
  tools that send none may watch but never fly;
* flying additionally needs the per-run token printed in the startup URL: opening that URL sets
  it as an HttpOnly, SameSite=Strict cookie, which the page's websocket then carries;
* each websocket may send at most ``control.max_messages_hz`` messages per second (a burst of one
  second's worth); the rest are dropped with a notice.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable
from urllib.parse import urlsplit

from navi_common.transport.endpoints import is_loopback_host

TOKEN_QUERY = "token"
LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_ANY_INTERFACE = frozenset({"", "0.0.0.0", "::", "*"})


def new_control_token() -> str:
    """A fresh random token for one dashboard run (128 bits, URL-safe)."""
    return secrets.token_urlsafe(16)


def host_name(host_header: str) -> str:
    """The name part of a ``Host`` header: ``127.0.0.1:8050`` -> ``127.0.0.1``, ``[::1]:80`` -> ``::1``."""
    value = host_header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value[1:]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def cookie_name(port: int | None) -> str:
    """Cookie that carries the control token; per port, as cookies ignore ports."""
    return f"navi_control_{port or 0}"


class AccessPolicy:
    """The Host allowlist, the origin rule and the control token of one dashboard run.

    Args:
        bound_host: the interface the server listens on (``--host``).
        allowed_hosts: extra names accepted in ``Host`` (``--allowed-hosts``).
        control_token: the run's token, or None when the page cannot fly.
    """

    def __init__(self, bound_host: str, allowed_hosts: Iterable[str], control_token: str | None) -> None:
        names = set(LOCAL_NAMES) | {host_name(name) for name in allowed_hosts}
        if bound_host.strip("[]") not in _ANY_INTERFACE:
            names.add(host_name(bound_host))
        self.allowed = frozenset(names)
        self.control_token = control_token

    def host_allowed(self, host_header: str | None) -> bool:
        """Whether ``Host`` names this dashboard (not a rebinding attacker's domain)."""
        return bool(host_header) and host_name(host_header or "") in self.allowed

    @staticmethod
    def origin_matches(origin: str | None, host_header: str | None) -> bool | None:
        """None without ``Origin`` (not a browser), else whether it is the page's own origin."""
        if origin is None:
            return None
        return bool(host_header) and urlsplit(origin).netloc.lower() == (host_header or "").lower()

    def token_valid(self, token: str | None) -> bool:
        """Constant-time comparison with the run's token."""
        if self.control_token is None or not token:
            return False
        return hmac.compare_digest(token.encode(), self.control_token.encode())

    def control_refusal(self, origin: str | None, host_header: str | None, token: str | None) -> str | None:
        """Why this websocket may not fly (None: it may)."""
        if self.control_token is None:
            return "keyboard flight is off: start the dashboard with --step-endpoint"
        if self.origin_matches(origin, host_header) is not True:
            return "keyboard flight needs the dashboard's own page (a matching Origin)"
        if not self.token_valid(token):
            return "keyboard flight needs the URL with the token that the dashboard printed at startup"
        return None


def is_wide(host: str) -> bool:
    """Whether the web server listens beyond this machine."""
    return host.strip("[]") in _ANY_INTERFACE or not is_loopback_host(host)


class RateLimiter:
    """A token bucket: ``rate`` events per second on average, bursts of up to ``rate`` (one second)."""

    def __init__(self, rate: float, now: float) -> None:
        self.rate = rate
        self.tokens = rate
        self.updated = now
        self.dropped = 0

    def allow(self, now: float) -> bool:
        """Take one token if there is one; count a drop otherwise."""
        self.tokens = min(self.rate, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        self.dropped += 1
        return False
