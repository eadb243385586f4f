"""The adversary's view of an execution, recorded as a sequence of events.

An event names the kind of memory pass (an allocation, a linear scan, one stage of a
sorting network, a fixed-stride shift, a released noisy size), the buffer it touches and
the public sizes that determine which positions are read and written.  Kernels in
:mod:`dodb.oblivious` access memory only in patterns fully determined by an event's kind
and sizes (docs/design.md §Invariants, 2), so the event sequence *is* the view up to that fixed
expansion.  Invariant 1 asks that the sequence be a deterministic function of public
information and the values an operator deliberately leaks; the tests check it by
simulating traces from exactly that information.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

__all__ = ["TraceEvent", "Trace"]


@dataclass(frozen=True)
class TraceEvent:
    kind: str
    buffer: int
    sizes: tuple[int, ...] = ()

    def __str__(self) -> str:
        return f"{self.kind}#{self.buffer}{list(self.sizes)}"


@dataclass
class Trace:
    """An append-only list of :class:`TraceEvent` with a buffer-id allocator.

    Buffer ids are handed out in allocation order, so they are themselves a function of
    the (public) sequence of allocations.
    """

    events: list[TraceEvent] = field(default_factory=list)
    _next_buffer: int = 0

    def alloc(self, length: int, width: int = 1, label: str = "buf") -> int:
        """Record an allocation of ``length`` rows of ``width`` words; return its id."""
        bid = self._next_buffer
        self._next_buffer += 1
        self.events.append(TraceEvent(f"alloc:{label}", bid, (int(length), int(width))))
        return bid

    def record(self, kind: str, buffer: int, *sizes: int) -> None:
        self.events.append(TraceEvent(kind, int(buffer), tuple(int(s) for s in sizes)))

    def leak(self, name: str, value: int) -> None:
        """A value made visible on purpose (a DP-noised size)."""
        self.events.append(TraceEvent(f"leak:{name}", -1, (int(value),)))

    def extend(self, events: Iterable[TraceEvent]) -> None:
        self.events.extend(events)

    def leaked_values(self) -> list[int]:
        return [e.sizes[0] for e in self.events if e.kind.startswith("leak:")]

    def __len__(self) -> int:
        return len(self.events)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trace) and self.events == other.events

    def summary(self) -> dict[str, int]:
        """Counts of event kinds (useful in reports and failing-test messages)."""
        out: dict[str, int] = {}
        for e in self.events:
            out[e.kind] = out.get(e.kind, 0) + 1
        return out
