"""``answer()``: routed, budgeted, focused, fenced prompts; the offline verbalizer's answers by
question kind and trust state; the OpenAI-compatible adapter against a local server."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from locimem import Detection, InvalidInput, ObjectMemory, ObjectStatus
from locimem.agent import Answer, OfflineVerbalizer, OpenAIChatVerbalizer, VerbalizerError
from locimem.agent.answer import SYSTEM, build_prompt
from locimem.agent.safety import estimate_tokens
from tests.agent.test_agent_tools import build_home


@pytest.fixture(scope="module")
def home():
    mem = build_home(ObjectMemory.open(":memory:", scope="home"))
    yield mem
    mem.close()


@pytest.mark.parametrize(("question", "kind", "text", "cited"), [
    ("Where is the cup?", "where_is",
     'The "cup" (#2) is on the "table" (#1) in the kitchen; last seen just now (t=45.0 s).',
     (2, 1)),
    ("which room is the phone in", "which_room",
     'The "phone" (#7) is in the living; last seen just now (t=45.0 s).', (7,)),
    ("what's on the table", "relational", 'On the "table" (#1): "cup" (#2), "mug" (#3).',
     (1, 2, 3)),
    ("is there a mug on the table", "relational", 'On the "table" (#1): "mug" (#3).', (1, 3)),
    ("what is in the drawer?", "relational", 'In the "drawer" (#5): "key" (#6).', (5, 6)),
    ("what's in the office", "room", 'In the office: "book" (#9, unconfirmed).', (9,)),
    ("is the cup still there?", "still_there",
     'Yes. The "cup" (#2) is on the "table" (#1) in the kitchen; last seen just now (t=45.0 s).',
     (2, 1)),
    ("Is the book still there", "still_there",
     'Probably. The "book" (#9) was last seen just now (t=45.0 s) in the office; I have not '
     "checked since, so it may have moved.", (9,)),
    ("is the plate still there?", "still_there",
     'No. The "plate" (#8) is lost: last seen 40 s ago (t=5.0 s) in the kitchen and not seen '
     "since; I gave it up at t=40.0 s.", (8,)),
    ("is the unicorn still here?", "still_there",
     "I have no memory of anything called 'unicorn'.", ()),
    ("where is the plate", "where_is",
     'The "plate" (#8) is lost: last seen 40 s ago (t=5.0 s) in the kitchen and not seen since; '
     "I gave it up at t=40.0 s.", (8,)),
    ("what changed since t=30", "changes_since",
     'Since t=30.0 s: "plate" (#8) lost; "book" (#9) appeared.', (8, 9)),
    ("what changed in the last 2 seconds", "changes_since",
     'Since t=43.0 s: "book" (#9) appeared.', (9,)),
    ("how do I get from the kitchen to the office", "path", "kitchen -> living -> office.", ()),
    ("find something to drink from", "find", None, None),
])
def test_offline_answers_by_kind(home, question, kind, text, cited):
    a = home.answer(question)
    assert isinstance(a, Answer) and str(a) == a.text
    assert a.kind == kind
    if text is not None:
        assert a.text == text
        assert a.cited == cited and a.unknown_ids == ()
    else:
        assert {2, 3} <= set(a.cited)


def test_the_prompt_is_budgeted_focused_and_fenced(home):
    p = build_prompt(home, "what is on the table?", budget_tokens=600)
    assert p.system == SYSTEM and p.messages[0] == {"role": "system", "content": SYSTEM}
    assert p.tokens <= 600 and estimate_tokens(p.text) <= 600
    user = p.messages[1]["content"]
    assert user.startswith("Question: what is on the table?\n\n<<<BEGIN UNTRUSTED FACTS ")
    assert "<<<BEGIN UNTRUSTED SCENE " in user and "focus: #1, #2, #3" in user
    assert "#9 " not in user  # the focused scene holds only the table, what is on it, its
    for fence in ("FACTS", "SCENE"):  # neighbours
        tags = re.findall(rf"<<<(?:BEGIN|END) UNTRUSTED {fence} ([a-p]{{8}})>>>", user)
        assert len(tags) == 2 and tags[0] == tags[1]
    # a tight budget shrinks the scene, never the system message or the question
    small = build_prompt(home, "what's in the kitchen", budget_tokens=400)
    assert small.tokens <= 400 and small.system == SYSTEM
    big = build_prompt(home, "what's in the kitchen", budget_tokens=5000)
    assert big.tokens > small.tokens
    with pytest.raises(InvalidInput, match="budget_tokens must be an integer of at least 400"):
        build_prompt(home, "where is the cup", budget_tokens=100)


def test_bad_questions_and_verbalizers(home):
    with pytest.raises(InvalidInput):
        home.answer("")
    with pytest.raises(InvalidInput):
        home.answer("x" * 501)
    with pytest.raises(InvalidInput):
        home.answer(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="verbalize"):
        home.answer("where is the cup", verbalizer=object())

    class Numbers:
        def verbalize(self, prompt):
            return 42

    with pytest.raises(VerbalizerError):
        home.answer("where is the cup", verbalizer=Numbers())


def test_a_custom_verbalizer_gets_the_prompt_and_invented_ids_are_flagged(home):
    seen = []

    class Echo:
        def verbalize(self, prompt):
            seen.append(prompt)
            return "The cup (#2) is on the table (#1), next to the spoon (#404)."

    a = home.answer("where is the cup", verbalizer=Echo())
    assert a.cited == (2, 1) and a.unknown_ids == (404,)
    assert seen[0].facts.kind == "where_is" and seen[0].facts.objects[0]["id"] == 2
    assert OfflineVerbalizer().verbalize(seen[0]) == home.answer("where is the cup").text


# -- the OpenAI-compatible adapter ---------------------------------------------------------------
class _ChatServer:
    """A local server speaking the chat-completions protocol; records what it was sent."""

    def __init__(self, reply: str = "The cup (#2) is on the table (#1).", status: int = 200,
                 body: bytes | None = None) -> None:
        outer = self
        self.requests: list[tuple[str, dict, dict]] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers["Content-Length"])
                payload = json.loads(self.rfile.read(length))
                outer.requests.append((self.path, dict(self.headers), payload))
                if status != 200:
                    data = b'{"error": {"message": "secret server detail"}}'
                elif body is not None:
                    data = body
                else:
                    data = json.dumps({
                        "id": "chatcmpl-1", "object": "chat.completion",
                        "model": payload["model"],
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": reply}}],
                    }).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # keep the test output quiet
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,),
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_openai_compatible_adapter_against_a_local_server(home):
    with _ChatServer() as server:
        v = OpenAIChatVerbalizer(server.url, model="local-model", api_key="sk-test",
                                 timeout_s=5)
        a = home.answer("where is the cup?", verbalizer=v)
    assert a.text == "The cup (#2) is on the table (#1)." and a.cited == (2, 1)
    path, headers, payload = server.requests[0]
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-test"
    assert payload["model"] == "local-model" and payload["stream"] is False
    assert payload["temperature"] == 0.0 and payload["max_tokens"] == 300
    assert [m["role"] for m in payload["messages"]] == ["system", "user"]
    assert payload["messages"][0]["content"] == SYSTEM
    assert "UNTRUSTED FACTS" in payload["messages"][1]["content"]
    assert "sk-test" not in repr(v)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"status": 500}, "the chat endpoint answered HTTP 500"),
    ({"body": b"not json"}, "response has no answer text"),
    ({"body": b'{"choices": []}'}, "response has no answer text"),
    ({"reply": "   "}, "response has no answer text"),
])
def test_adapter_failures_are_verbalizer_errors(home, kwargs, message):
    with _ChatServer(**kwargs) as server, \
            pytest.raises(VerbalizerError, match=message) as info:
        home.answer("where is the cup", verbalizer=OpenAIChatVerbalizer(server.url, timeout_s=5))
    assert "secret server detail" not in str(info.value)


def test_adapter_configuration_and_unreachable_endpoint(home):
    for bad in ("ftp://x/v1", "localhost:11434", "", None):
        with pytest.raises(InvalidInput, match="base_url"):
            OpenAIChatVerbalizer(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="model"):
        OpenAIChatVerbalizer("http://localhost:1/v1", model=" ")
    v = OpenAIChatVerbalizer("http://127.0.0.1:9/v1", timeout_s=2)  # the discard port
    assert v.url == "http://127.0.0.1:9/v1/chat/completions"
    with pytest.raises(VerbalizerError, match="could not reach the chat endpoint"):
        home.answer("where is the cup", verbalizer=v)


def test_still_there_answers_for_the_established_thing_not_a_later_glimpse():
    # the plate (#8) was lost at t=40; at t=46 something like a plate is glimpsed once on a
    # shelf in the office (#10, unconfirmed). "Is the plate still there" asks after #8: no.
    mem = build_home(ObjectMemory.open(":memory:", scope="home"))
    mem.observe(46.0, [Detection("plate", 0.6, (13.0, 3.0, 1.8), (0.2, 0.2, 0.1))])
    (glimpse,) = [o for o in mem.objects() if o.label == "plate" and o.id != 8]
    assert glimpse.status is ObjectStatus.TENTATIVE
    assert mem.recall("plate").object_id == glimpse.id  # recall: the latest evidence first
    a = mem.answer("is the plate still there?")
    assert a.text.startswith('No. The "plate" (#8) is lost')
    assert glimpse.id not in a.cited
    # where is the plate: the glimpse is the latest evidence, and is said to be unconfirmed
    assert f"#{glimpse.id}" in mem.answer("where is the plate?").text
    mem.close()
