"""The MCP server, through the official SDK's own client: in-process, over a real stdio
subprocess (``python -m locimem mcp STORE``) and over streamable HTTP on loopback
(``python -m locimem mcp STORE --http 127.0.0.1:0``), listing and calling every tool."""

from __future__ import annotations

import json
import os
import sys

import pytest

from locimem import Detection, ObjectMemory
from locimem.errors import ReadOnly
from tests.agent.test_agent_injection import NOTE, bad_chars, injected_home, strings_in
from tests.agent.test_agent_tools import build_home

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")

from mcp import Client, StdioServerParameters  # noqa: E402

import locimem  # noqa: E402
from locimem.mcp.server import OUTPUT_SCHEMA, build_server  # noqa: E402


def run(coro_fn, *args):
    return anyio.run(coro_fn, *args)


def payload(result) -> dict:
    assert result.is_error is False, result.content[0].text
    data = json.loads(result.content[0].text)
    assert result.structured_content == data  # structured, and the same as text
    return data


@pytest.fixture(scope="module")
def home():
    mem = build_home(ObjectMemory.open(":memory:", scope="home"))
    yield mem
    mem.close()


def test_lists_and_calls_the_tools_in_process(home):
    server = build_server(home)

    async def main():
        async with Client(server) as client:
            listed = (await client.list_tools()).tools
            names = [t.name for t in listed]
            assert names == home.tools().names()
            assert "forget_object" not in names and "correct_label" not in names
            where = next(t for t in listed if t.name == "where_is")
            assert where.input_schema == home.tools().spec("where_is").parameters
            assert where.annotations.read_only_hint is True
            assert all(t.output_schema == OUTPUT_SCHEMA for t in listed)
            assert (client.server_info.name, client.server_info.version) == (
                "locimem", locimem.__version__)
            r = payload(await client.call_tool("where_is", {"name": "cup"}))
            assert r["cite"] == [1, 2]
            assert r["answer"].startswith('The "cup" (#2) is on the "table"')
            r = payload(await client.call_tool("related_objects", {"name": "table"}))
            assert [o["id"] for o in r["objects"]] == [2, 3]
            r = payload(await client.call_tool("ask_memory", {"question": "what changed since "
                                                                          "t=30"}))
            assert r["answer"] == 'Since t=30.0 s: "plate" (#8) lost; "book" (#9) appeared.'
            bad = await client.call_tool("objects_near_point", {"point": [0, 0, "x"],
                                                                "radius_m": -1})
            assert bad.is_error is True
            assert bad.content[0].text == (
                "Error executing tool objects_near_point: objects_near_point: invalid "
                "arguments: point[2]: must be a finite number; radius_m: must be greater "
                "than 0")
            missing = await client.call_tool("describe_object", {"object_id": 99})
            assert missing.is_error and "not found" in missing.content[0].text
            hidden = await client.call_tool("forget_object", {"object_id": 2, "reason": "x"})
            assert hidden.is_error
            resources = (await client.list_resources()).resources
            assert {str(r.uri) for r in resources} == {"locimem://scene",
                                                       "locimem://scene.json"}
            scene = (await client.read_resource("locimem://scene")).contents[0].text
            assert scene.startswith("<<<BEGIN UNTRUSTED SCENE ")
            assert '#2 "cup" on #1' in scene
            doc = json.loads((await client.read_resource("locimem://scene.json"))
                             .contents[0].text)
            assert doc["objects_total"] == 9

    run(main)
    assert home.get(2).label == "cup"  # nothing was forgotten


def test_write_tools_only_when_allowed_on_a_writable_memory(store_path):
    build_home(ObjectMemory.open(store_path, scope="home")).close()
    with ObjectMemory.open(store_path, scope="home", read_only=True) as ro, \
            pytest.raises(ReadOnly):
        build_server(ro, allow_writes=True)
    with ObjectMemory.open(store_path, scope="home") as mem:
        server = build_server(mem, allow_writes=True)

        async def main():
            async with Client(server) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                assert {"correct_label", "forget_object"} <= set(names)
                r = payload(await client.call_tool("correct_label", {
                    "object_id": 3, "label": "vase", "reason": "the user said so"}))
                assert r["object"]["label"] == "vase"

        run(main)
        assert [(a.actor, a.reason) for a in mem.audit(kind="correction")] == [
            ("agent", "the user said so")]


def test_an_injected_label_stays_inert_over_mcp():
    with injected_home() as mem:
        server = build_server(mem)

        async def main():
            async with Client(server) as client:
                texts = []
                for name, args in (("related_objects", {"object_id": 1}),
                                   ("describe_object", {"object_id": 2}),
                                   ("describe_object", {"object_id": 3}),
                                   ("ask_memory", {"question": "what is on the table"}),
                                   ("scene_summary", {})):
                    texts.append(payload(await client.call_tool(name, args)))
                bad = await client.call_tool("where_is", {"name": NOTE * 5})
                assert bad.is_error and "SYSTEM" not in bad.content[0].text
                scene = (await client.read_resource("locimem://scene")).contents[0].text
                return texts, scene

        results, scene = run(main)
    for r in results:
        for s in strings_in(r):
            assert bad_chars(s) == [] and "\n" not in s
    assert bad_chars(scene.replace("\n", "")) == []
    assert not any(line.lstrip().upper().startswith("SYSTEM") for line in scene.splitlines())


def test_over_a_real_stdio_subprocess_read_only_and_fresh(store_path):
    build_home(ObjectMemory.open(store_path, scope="home")).close()
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "locimem", "mcp", str(store_path),
                                         "--scope", "home"],
                                   env=dict(os.environ))  # this checkout's locimem

    async def main():
        async with Client(params, read_timeout_seconds=30) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "where_is" in names and "forget_object" not in names
            r = payload(await client.call_tool("where_is", {"name": "mug"}))
            assert r["cite"] == [1, 3]
            gone = payload(await client.call_tool("where_is", {"name": "vase"}))
            assert gone["found"] is False
            # the server is read-only: the robot keeps writing, and the server sees it
            with ObjectMemory.open(store_path, scope="home") as writer:
                for t in range(46, 53):
                    writer.observe(float(t), [Detection("vase", 0.9, (9.0, 3.0, 0.5),
                                                        (0.12, 0.12, 0.25))])
            r = payload(await client.call_tool("where_is", {"name": "vase"}))
            assert r["found"] is True and r["object"]["room"] == "living"

    run(main)


def test_cli_without_a_store(tmp_path, capsys):
    from locimem.cli import main

    assert main(["mcp", str(tmp_path / "missing.loci")]) == 2
    assert "no store at" in capsys.readouterr().err


def test_over_streamable_http_on_loopback_every_tool(store_path):
    import subprocess

    build_home(ObjectMemory.open(store_path, scope="home")).close()
    with ObjectMemory.open(store_path, scope="home", read_only=True) as mem:
        specs = list(mem.tools())
    proc = subprocess.Popen([sys.executable, "-m", "locimem", "mcp", str(store_path),
                             "--http", "127.0.0.1:0", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        url = json.loads(line)["url"]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")

        async def main():
            async with Client(url, read_timeout_seconds=30) as client:
                assert client.server_info.version == locimem.__version__
                listed = (await client.list_tools()).tools
                assert [t.name for t in listed] == [s.name for s in specs]
                for spec in specs:
                    for example in spec.examples:
                        result = await client.call_tool(spec.name, example)
                        assert isinstance(payload(result)["cite"], list), spec.name
                bad = await client.call_tool("describe_object", {"object_id": 0})
                assert bad.is_error and "object_id: must be at least 1" in bad.content[0].text

        run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_over_stdio_every_line_gets_an_answer(store_path):
    # The SDK drops a line it cannot read without a reply; each gets its JSON-RPC error here
    # and the session goes on.
    import select
    import subprocess

    build_home(ObjectMemory.open(store_path, scope="home")).close()
    proc = subprocess.Popen([sys.executable, "-m", "locimem", "mcp", str(store_path),
                             "--scope", "home"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None

    def ask(line: str) -> dict:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready, f"no reply to {line[:60]!r}"
        return json.loads(proc.stdout.readline())

    def call(rid: int, arguments: dict) -> str:
        return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                           "params": {"name": "where_is", "arguments": arguments}})

    try:
        init = ask(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}))
        assert init["id"] == 1 and "result" in init
        proc.stdin.write(json.dumps({"jsonrpc": "2.0",
                                     "method": "notifications/initialized"}) + "\n")
        deep = json.loads("[" * 900 + "]" * 900)
        cases = [
            (call(2, {"name": "\\ud800"}).replace("\\\\ud800", "\\ud800"), 2, -32600,
             "Invalid Request: a string holds a lone UTF-16 surrogate escape (such as "
             "\\ud800); send valid Unicode"),
            (call(3, {"name": "mug", "x": deep}), 3, -32600,
             "Invalid Request: the JSON nests too deeply (a tool's arguments are a few "
             "levels at most)"),
            ("[" * 5000 + "]" * 5000, None, -32700,
             "Parse error: the JSON nests too deeply to read"),
            ("not json", None, -32700,
             "Parse error: not JSON (Expecting value: line 1 column 1 (char 0))"),
            ('{"id": 5}', 5, -32600,
             "Invalid Request: not a JSON-RPC 2.0 request, notification or response"),
        ]
        for line, rid, code, message in cases:
            assert ask(line) == {"jsonrpc": "2.0", "id": rid,
                                 "error": {"code": code, "message": message}}
        good = ask(call(6, {"name": "mug"}))  # the session goes on
        assert good["id"] == 6 and good["result"]["structuredContent"]["cite"] == [1, 3]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.returncode == 0
