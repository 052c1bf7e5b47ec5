"""The Model Context Protocol front end: ``locimem mcp STORE`` serves a memory's agent tools
(:mod:`locimem.agent.tools`) over stdio or HTTP (:mod:`.server`), with the HTTP transport's
safety rules — loopback by default, a bearer token, the Host/Origin check — in :mod:`.http`.
Needs the ``mcp`` extra.
"""
