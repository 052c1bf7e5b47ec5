"""The MCP server's memory stays current with what a robot writes beside it: on PostgreSQL a
reader or writer catches up on the scope's log before each call, so an object the robot
created after the server opened is found, described and corrected (it answered "not found"
before; issue 36, item 7)."""

from __future__ import annotations

import pytest

from locimem import Detection, ObjectMemory
from locimem.agent.tools import ToolRegistry
from locimem.mcp.server import StoreHandle
from tests import pg

CUP = Detection("cup", 0.95, (1.0, 1.0, 0.9), (0.1, 0.1, 0.1))
BOOK = Detection("book", 0.95, (3.0, 1.0, 0.8), (0.2, 0.15, 0.05))


@pg.needs_postgres
@pytest.mark.parametrize("writes", [False, True], ids=["read-only", "writes"])
def test_an_object_the_robot_created_after_the_server_opened_is_found(writes) -> None:
    url = pg.new_url("mcp")
    with ObjectMemory.open(url, scope="home") as robot:
        robot.observe(0.0, [CUP])
        handle = StoreHandle(url, scope="home", allow_writes=writes)
        try:
            robot.observe(1.0, [CUP, BOOK])  # after the server opened
            book = next(o.id for o in robot.objects() if o.label == "book")
            tools = ToolRegistry(handle.reader(), allow_writes=writes)
            assert tools.call("describe_object", {"object_id": book})["object"]["label"] == \
                "book"
            if writes:
                done = tools.call("correct_label", {"object_id": book, "label": "novel"})
                assert done["ok"] and done["object"]["label"] == "novel"
                robot.refresh()
                assert robot.get(book).label == "novel"
            else:  # the server's memory is at the robot's latest commit, and no further
                assert handle.reader()._live.state.next_commit == robot._live.state.next_commit
        finally:
            handle.close()
