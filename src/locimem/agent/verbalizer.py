"""Verbalizers: turn an answer prompt into a sentence.

A :class:`Verbalizer` is anything with ``verbalize(prompt) -> str``. Two ship here:

- :class:`OfflineVerbalizer` answers the common question kinds deterministically from the
  retrieved facts the prompt carries — no model, no network — citing object ids and hedging
  by trust state. The demo, the tests and ``locimem bench qa`` use it.
- :class:`OpenAIChatVerbalizer` sends the prompt's messages to an OpenAI-compatible chat
  endpoint (``POST {base_url}/chat/completions``: OpenAI, or local servers such as Ollama,
  vLLM, llama.cpp) with the standard library's ``urllib``; no extra dependency.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from locimem.errors import InvalidInput, LocimemError
from locimem.language.hedge import when

if TYPE_CHECKING:
    from locimem.agent.facts import Facts, Prompt

__all__ = ["OfflineVerbalizer", "OpenAIChatVerbalizer", "Verbalizer", "VerbalizerError"]

LIST_LIMIT = 20
_SALIENT = ("appeared", "moved", "relabelled", "lost", "reacquired", "corrected", "revived")
_RELATION_WORDS = {"on": "On", "in": "In", "under": "Under", "next_to": "Next to",
                   "near": "Near", "contains": "What contains"}
_NOTES = {"unconfirmed": "unconfirmed", "doubtful": "doubtful", "lost": "lost"}


class VerbalizerError(LocimemError):
    """A verbalizer could not produce an answer (the endpoint failed or answered nonsense)."""


@runtime_checkable
class Verbalizer(Protocol):
    """Prompt in, text out."""

    def verbalize(self, prompt: Prompt) -> str: ...


# -- offline ------------------------------------------------------------------------------------
def _q(label: str) -> str:
    """A fact's label (already cleaned) in double quotes: it reads as a name."""
    return '"' + label.replace('"', "'") + '"'


def _ref(f: dict[str, Any]) -> str:
    note = _NOTES.get(f.get("word", ""))
    return f"{_q(f['label'])} (#{f['id']}{', ' + note if note else ''})"


def _listing(objs: tuple[dict[str, Any], ...] | list[dict[str, Any]], total: int) -> str:
    names = [_ref(f) for f in objs[:LIST_LIMIT]]
    more = total - len(names)
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def _salient(words: list[str]) -> list[str]:
    out = []
    for w in words:
        if w in _SALIENT or w.startswith(("now on ", "now in ", "no longer on ",
                                          "no longer in ")):
            out.append(w)
    return out


class OfflineVerbalizer:
    """Deterministic answers from the retrieved facts (ignores the prompt's text).

    Per question kind: *where is* and *which room* give one hedged sentence about the best
    match (present tense only when confirmed); *is it still there* answers yes / probably /
    probably not / no by trust state; *what is on / in*, *what is in the room*, *find*,
    *recent*, *stale* and *near me* list the objects with their ids and a note for any that
    is not confirmed; *what changed* lists the salient changes per object; *path* the rooms.
    """

    def verbalize(self, prompt: Prompt) -> str:
        return self.answer(prompt.facts)

    def answer(self, f: Facts) -> str:
        kind = f.kind
        if not f.found and kind not in ("relational", "room", "changes_since", "stale"):
            return f.summary
        if kind == "still_there":
            return _still_there(f)
        if kind in ("where_is", "which_room"):
            return f.sentence or f.summary
        if kind == "relational":
            if f.anchor is None:
                return f.summary
            head = f"{_RELATION_WORDS.get(f.relation or 'on', 'On')} the " \
                   f"{_q(f.anchor['label'])} (#{f.anchor['id']})"
            if not f.objects:
                what = f"no {f.target} that I know of" if f.target else "nothing that I know of"
                return f"{head}: {what}."
            return f"{head}: {_listing(f.objects, f.total)}."
        if kind == "room":
            if not f.objects:
                return f"In the {f.room}: nothing that I know of."
            return f"In the {f.room}: {_listing(f.objects, f.total)}."
        if kind == "changes_since":
            parts = []
            for c in f.changes:
                words = list(c["net"]) if "net" in c else _salient(list(c["changes"]))
                if words:
                    parts.append(f"{_q(c['label'])} (#{c['id']}) {', '.join(words)}")
            since = f"Since {when(f.since_t)}" if f.since_t is not None else "Recently"
            if not parts:
                return f"{since}: nothing changed that I noticed."
            more = len(parts) - LIST_LIMIT
            body = "; ".join(parts[:LIST_LIMIT]) + (f"; and {more} more" if more > 0 else "")
            return f"{since}: {body}."
        if kind == "path":
            if not f.path:
                return f.summary
            return " -> ".join(f.path) + "."
        heads = {"find": "Found", "recent": "Most recently seen", "near_me": "Near you"}
        if kind == "stale":
            head = f"Not seen since {when(f.since_t)}" if f.since_t is not None \
                else "Not seen lately"
            return f"{head}: {_listing(f.objects, f.total) or 'nothing'}."
        if kind in heads:
            return f"{heads[kind]}: {_listing(f.objects, f.total) or 'nothing'}."
        return f.summary


def _still_there(f: Facts) -> str:
    if not f.objects:
        if f.anchor is not None and f.target:  # "is the cup on the table still there"
            where = f"{(f.relation or 'on').replace('_', ' ')} the {_q(f.anchor['label'])}"
            return f"No. I know of no {f.target} {where} (#{f.anchor['id']})."
        return f.summary
    word = f.objects[0]["word"]
    lead = {"confirmed": "Yes.", "unconfirmed": "Probably.", "doubtful": "Probably not.",
            "lost": "No."}.get(word, "I am not sure.")
    return f"{lead} {f.sentence or f.summary}"


# -- an OpenAI-compatible chat endpoint ---------------------------------------------------------
class OpenAIChatVerbalizer:
    """Ask a model behind an OpenAI-compatible chat-completions endpoint.

    Args:
        base_url: the API root, e.g. ``"http://localhost:11434/v1"`` (Ollama),
            ``"http://localhost:8000/v1"`` (vLLM) or ``"https://api.openai.com/v1"``; the
            request goes to ``{base_url}/chat/completions``.
        model: the model name the server knows.
        api_key: sent as ``Authorization: Bearer …`` when given (local servers need none).
        timeout_s: seconds to wait for the answer.
        temperature, max_tokens: sampling settings sent with the request.
        max_response_bytes: a larger response is refused.

    Raises :class:`VerbalizerError` (with the HTTP status, never the response body) when the
    endpoint fails or its answer has no text.
    """

    def __init__(self, base_url: str = "http://localhost:11434/v1", model: str = "llama3.1",
                 *, api_key: str | None = None, timeout_s: float = 60.0,
                 temperature: float = 0.0, max_tokens: int = 300,
                 max_response_bytes: int = 1_000_000) -> None:
        parts = urllib.parse.urlsplit(base_url if isinstance(base_url, str) else "")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidInput("base_url must be an http:// or https:// URL")
        if not isinstance(model, str) or not model.strip():
            raise InvalidInput("model must be a non-empty string")
        if not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
            raise InvalidInput("timeout_s must be a positive number of seconds")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self._api_key = api_key
        self.timeout_s = float(timeout_s)
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.max_response_bytes = int(max_response_bytes)

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIChatVerbalizer({self.url!r}, model={self.model!r})"

    def verbalize(self, prompt: Prompt) -> str:
        return self.complete(prompt.messages)

    def complete(self, messages: list[dict[str, str]]) -> str:
        """Send chat ``messages`` and return the first choice's text."""
        body = json.dumps({"model": self.model, "messages": messages,
                           "temperature": self.temperature, "max_tokens": self.max_tokens,
                           "stream": False}).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read(self.max_response_bytes + 1)
        except urllib.error.HTTPError as exc:
            raise VerbalizerError(f"the chat endpoint answered HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError, ValueError):
            raise VerbalizerError(f"could not reach the chat endpoint at {self.url}") from None
        if len(raw) > self.max_response_bytes:
            raise VerbalizerError("the chat endpoint's response is too large")
        try:
            data = json.loads(raw.decode("utf-8"))
            text = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise VerbalizerError("the chat endpoint's response has no answer text") from None
        if not isinstance(text, str) or not text.strip():
            raise VerbalizerError("the chat endpoint's response has no answer text")
        return text.strip()
