"""The agent layer: tools for function-calling models, a budgeted scene prompt, ``answer()``
and an MCP server.

Reach it from a memory: ``mem.tools(allow_writes=False)``, ``mem.scene_prompt(...)``,
``mem.answer(question, verbalizer=None)``; ``locimem mcp STORE`` serves the tools over MCP.
"""

from locimem.agent.answer import Answer, Facts, Prompt, answer
from locimem.agent.prompt import scene_data, scene_prompt
from locimem.agent.tools import ToolRegistry, ToolSpec
from locimem.agent.verbalizer import (
    OfflineVerbalizer,
    OpenAIChatVerbalizer,
    Verbalizer,
    VerbalizerError,
)

__all__ = [
    "Answer",
    "Facts",
    "OfflineVerbalizer",
    "OpenAIChatVerbalizer",
    "Prompt",
    "ToolRegistry",
    "ToolSpec",
    "Verbalizer",
    "VerbalizerError",
    "answer",
    "scene_data",
    "scene_prompt",
]
