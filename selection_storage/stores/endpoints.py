"""Whether a store's (or a scheduler's) endpoint accepts a connection, asked before a client would wait for it."""

from __future__ import annotations

from typing import Final

#: Seconds to wait for a store's endpoint (set explicitly) to accept a connection before a run is refused.
CONNECT_TIMEOUT_SECONDS: Final[float] = 3.0

_reachable: set[str] = set()


def connection_refusal(url: str, timeout: float = CONNECT_TIMEOUT_SECONDS) -> str | None:
    """Why the host and port of ``url`` (``scheme://host:port``) do not accept a TCP connection; None if they do."""
    import socket
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        socket.create_connection((parts.hostname or "", port), timeout=timeout).close()
    except (OSError, ValueError) as exc:
        return str(getattr(exc, "strerror", None) or exc or type(exc).__name__).lower()
    return None


def refusal_once(endpoint: str) -> str | None:
    """:func:`connection_refusal` of a store's endpoint, asked until it has accepted once in this process."""
    if endpoint in _reachable:
        return None
    reason = connection_refusal(endpoint)
    if reason is None:
        _reachable.add(endpoint)
    return reason
