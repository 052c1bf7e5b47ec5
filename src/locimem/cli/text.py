"""Events and audit entries as lines a person reads (and as their JSON records)."""

from __future__ import annotations

from typing import Any

from locimem.cli.common import rounded, time_text
from locimem.language.events import event_line
from locimem.language.hedge import sanitize
from locimem.model import AuditEntry, Event


def format_event(ev: Event) -> str:
    """One readable line for an event (:func:`locimem.language.events.event_line`)."""
    return event_line(ev)


def event_doc(ev: Event) -> dict[str, Any]:
    """An event's JSON Lines record."""
    return {"seq": ev.seq, "commit": ev.commit, "t": ev.t, "kind": ev.kind.value,
            "object_id": ev.object_id, "label": ev.label, "data": ev.data}


def audit_doc(e: AuditEntry) -> dict[str, Any]:
    """An audit entry's JSON Lines record, numbers rounded (4 decimals; times to the ms)."""
    return {"commit": e.commit, "kind": e.kind, "actor": e.actor, "reason": e.reason,
            "t": round(e.t, 3), "recorded_at": round(e.recorded_at, 3),
            "events": [{"kind": ev.kind.value, "object_id": ev.object_id, "label": ev.label,
                        "data": rounded(ev.data)} for ev in e.events]}


def audit_lines(e: AuditEntry) -> list[str]:
    why = f" ({sanitize(e.reason)})" if e.reason else ""
    head = f"{time_text(e.t):>24}  {e.kind:<11} by {sanitize(e.actor)}{why}"
    return [head, *(f"{'':>26}{format_event(ev)}" for ev in e.events)]
