"""The gateway's own error (a module of its own: the server and the statement helpers both raise it)."""
from __future__ import annotations

from ..errors import DodbError

__all__ = ["GatewayError", "unsupported"]


class GatewayError(DodbError):
    """A request the gateway refuses: an unsupported Flight SQL command, a stale handle, bad parameters."""


def unsupported(what: str) -> GatewayError:
    return GatewayError(f"not supported by dodb gateway: {what}")
