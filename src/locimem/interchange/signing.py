"""Signing a memory directory: the manifest's own digest, and an HMAC-SHA256 over it that
covers every file (the manifest lists each one's SHA-256)."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

from locimem.errors import IntegrityError, InvalidInput

__all__ = ["CANONICAL_JSON", "MIN_HMAC_KEY_BYTES", "canonical_line", "check_hmac_key",
           "manifest_signature"]

MIN_HMAC_KEY_BYTES = 16
CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False,
                                  ensure_ascii=False)
"""The one JSON form of the directory's lines and of what is signed: sorted keys, no spaces,
no NaN."""
canonical_line = CANONICAL_JSON.encode


def _manifest_digest(manifest: dict[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(canonical_line(body).encode()).hexdigest()


def check_hmac_key(key: Any) -> bytes:
    """An HMAC key: bytes, at least :data:`MIN_HMAC_KEY_BYTES` long."""
    if not isinstance(key, (bytes, bytearray)):
        raise InvalidInput(f"hmac_key must be bytes, got {type(key).__name__}")
    if len(key) < MIN_HMAC_KEY_BYTES:
        raise InvalidInput(f"hmac_key must be at least {MIN_HMAC_KEY_BYTES} bytes, got "
                           f"{len(key)}")
    return bytes(key)


def manifest_signature(manifest: dict[str, Any], key: bytes) -> str:
    """HMAC-SHA256 (hex) of the manifest's canonical JSON without ``hmac_sha256`` and
    ``manifest_sha256``. The manifest lists the SHA-256 of every file, so the signature covers
    the whole directory."""
    body = {k: v for k, v in manifest.items() if k not in ("manifest_sha256", "hmac_sha256")}
    return hmac.new(key, canonical_line(body).encode(), hashlib.sha256).hexdigest()


def _check_signature(path: Path, doc: dict[str, Any], key: bytes | None) -> None:
    where = repr(str(path))
    signature = doc.get("hmac_sha256")
    if signature is None:
        if key is not None:
            raise IntegrityError(f"memory directory {where} is not signed, but an HMAC key was "
                                 "given: it was not exported with that key (or its signature "
                                 "was removed); nothing was imported")
        return
    if key is None:
        raise IntegrityError(f"memory directory {where} is signed (HMAC-SHA256); pass the key "
                             "it was exported with (hmac_key=, or --hmac-key-file) to import "
                             "it; nothing was imported")
    if not isinstance(signature, str) or not hmac.compare_digest(
            signature, manifest_signature(doc, key)):
        raise IntegrityError(f"memory directory {where}: its signature does not match the HMAC "
                             "key given — it was signed with another key, or changed after it "
                             "was signed; nothing was imported")
