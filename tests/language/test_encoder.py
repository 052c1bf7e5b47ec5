"""Text encoders: the protocol, the WordPiece tokenizer (no extra needed), and the real
MiniLM encoder (skipped unless the ``text`` extra is installed)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from locimem.errors import InvalidInput, LocimemError
from locimem.language import encoder as enc
from locimem.language.encoder import (
    Encoder,
    EncoderUnavailable,
    HashingEncoder,
    ModelFileError,
    WordPieceTokenizer,
    load_minilm_vocab,
)


@pytest.fixture(scope="module")
def tokenizer() -> WordPieceTokenizer:
    return WordPieceTokenizer(load_minilm_vocab())


# -- tokenizer: ids checked against the Hugging Face tokenizer of all-MiniLM-L6-v2 -------------

@pytest.mark.parametrize(("text", "ids"), [
    ("mug", [101, 14757, 102]),
    ("coffee cup", [101, 4157, 2452, 102]),
    ("something to drink from", [101, 2242, 2000, 4392, 2013, 102]),
    ("what's on the kitchen table?", [101, 2054, 1005, 1055, 2006, 1996, 3829, 2795, 1029, 102]),
    ("naïve café", [101, 15743, 7668, 102]),
    ("TV-remote", [101, 2694, 1011, 6556, 102]),
    ("trash_can", [101, 11669, 1035, 2064, 102]),
    ("厨房 table", [101, 100, 100, 2795, 102]),
    ("emoji 🙂 cup", [101, 7861, 29147, 2072, 100, 2452, 102]),
    ("cellphone", [101, 3526, 9864, 102]),
    ("cupboard", [101, 25337, 102]),
])
def test_wordpiece_matches_reference_ids(tokenizer: WordPieceTokenizer, text: str,
                                         ids: list[int]) -> None:
    assert tokenizer.encode(text) == ids


def test_wordpiece_edges(tokenizer: WordPieceTokenizer) -> None:
    assert len(tokenizer.vocab) == 30522
    assert tokenizer.encode("") == [101, 102]
    assert tokenizer.encode("a" * 101) == [101, 100, 102]  # over 100 chars: [UNK]
    assert tokenizer.tokenize("fridge\x00door") == ["fridge", "##door"]  # NUL dropped
    assert len(tokenizer.encode("cup " * 200, max_length=16)) == 16
    # special-token text is plain text: a label cannot inject [CLS]
    assert tokenizer.tokenize("[CLS]") == ["[", "cl", "##s", "]"]
    ids, mask, types = tokenizer.batch(["cup", "coffee cup"])
    assert ids.tolist() == [[101, 2452, 102, 0], [101, 4157, 2452, 102]]
    assert mask.tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    assert types.tolist() == [[0] * 4, [0] * 4]
    assert ids.dtype == np.int64


def test_tokenizer_needs_special_tokens() -> None:
    with pytest.raises(InvalidInput, match=r"lacks the unk token '\[UNK\]'"):
        WordPieceTokenizer(["[CLS]", "[SEP]", "[PAD]", "cup"])


def test_vocab_checksum_is_verified(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(enc, "MINILM_VOCAB_SHA256", "0" * 64)
    with pytest.raises(ModelFileError, match=r"vocabulary checksum mismatch: expected sha256 0+"):
        load_minilm_vocab()


# -- the protocol and the stand-in --------------------------------------------------------------

def test_hashing_encoder_is_an_encoder() -> None:
    e = HashingEncoder(64)
    assert isinstance(e, Encoder)
    v = e.encode(["cup", "cup", "", "a much longer label"])
    assert v.shape == (4, 64) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0)
    assert np.array_equal(v[0], v[1])
    assert e.encode([]).shape == (0, 64)
    with pytest.raises(InvalidInput, match="single string"):
        e.encode("cup")
    with pytest.raises(InvalidInput, match=r"texts\[1\] must be a string, got int"):
        e.encode(["cup", 3])
    with pytest.raises(InvalidInput, match="dim must be an integer >= 8"):
        HashingEncoder(4)


def test_missing_onnxruntime_raises_a_locimem_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import now fails
    with pytest.raises(EncoderUnavailable, match=r"pip install 'locimem\[text\]'") as info:
        enc.MiniLMEncoder()
    assert isinstance(info.value, LocimemError) and isinstance(info.value, ImportError)


def test_core_does_not_import_onnxruntime() -> None:
    import subprocess

    code = ("import sys, locimem, locimem.language.encoder, locimem.language.text, "
            "locimem.language.router, locimem.index.vectors, locimem.scene.rooms, "
            "locimem.scene.relations; "
            "print(sorted(m for m in ('onnxruntime', 'usearch') if sys.modules.get(m)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


# -- the real encoder (the text extra) ----------------------------------------------------------

@pytest.fixture(scope="module")
def minilm() -> enc.MiniLMEncoder:
    pytest.importorskip("onnxruntime")
    pytest.importorskip(enc.MINILM_INT8_PACKAGE)
    return enc.MiniLMEncoder()


def test_model_checksum_mismatch_is_refused(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("onnxruntime")
    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"not a model")
    with pytest.raises(ModelFileError, match=r"checksum mismatch .* expected sha256 8199be6f"):
        enc.MiniLMEncoder(bogus, expected_sha256=enc.MINILM_INT8_SHA256)
    with pytest.raises(ModelFileError, match="onnxruntime cannot load"):
        enc.MiniLMEncoder(bogus)  # your own file: checked only against a digest you give
    with pytest.raises(ModelFileError, match="model file not found"):
        enc.MiniLMEncoder(tmp_path / "absent.onnx")


def test_minilm_vectors(minilm: enc.MiniLMEncoder) -> None:
    assert isinstance(minilm, Encoder) and minilm.dim == 384
    assert minilm.model_path.name == "model.onnx"
    v = minilm.encode(["mug", "cup", "chair"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    mug_cup, mug_chair = float(v[0] @ v[1]), float(v[0] @ v[2])
    assert mug_cup > mug_chair + 0.3


# cosines from the fp32 sentence-transformers model (torch); the int8 file with this
# tokenizer and pooling must stay within 0.01 of them
FP32_COSINES = [("mug", "cup", 0.7071), ("mug", "chair", 0.2953), ("sofa", "couch", 0.8564),
                ("something to drink from", "glass", 0.4055), ("refrigerator", "fridge", 0.9644),
                ("table", "vegetable", 0.2936), ("cell phone", "smartphone", 0.76)]


def test_minilm_matches_the_reference_model(minilm: enc.MiniLMEncoder) -> None:
    for a, b, expected in FP32_COSINES:
        va, vb = minilm.encode([a, b])
        assert abs(float(va @ vb) - expected) < 0.01, (a, b)


def test_minilm_batching_does_not_change_vectors(minilm: enc.MiniLMEncoder) -> None:
    texts = ["cup", "a very long description of a red ceramic coffee mug", "tv", "", "sofa"]
    together = minilm.encode(texts)
    alone = np.vstack([minilm.encode([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-4)
    assert np.array_equal(minilm.encode(texts), together)  # deterministic
    assert minilm.encode([]).shape == (0, 384)


# -- your own ONNX model, and the [encoder] table of a TOML config ------------------------------

@pytest.fixture(scope="module")
def own_model(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """A model and vocabulary of "your own": copies of the packaged ones in a folder."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip(enc.MINILM_INT8_PACKAGE)
    folder = tmp_path_factory.mktemp("models")
    model = folder / "my-encoder.onnx"
    model.write_bytes(enc.locate_minilm_model().read_bytes())
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(enc.load_minilm_vocab()) + "\n", encoding="utf-8")
    return folder, model, vocab


def test_your_own_onnx_model_and_vocabulary(own_model: tuple, minilm: enc.MiniLMEncoder
                                            ) -> None:
    _, model, vocab = own_model
    mine = enc.MiniLMEncoder(model, vocab_path=vocab)  # no digest: yours to vouch for
    assert mine.dim == 384  # read from the model
    texts = ["coffee mug", "something to drink from", "stapler"]
    assert np.array_equal(mine.encode(texts), minilm.encode(texts))
    digest = enc._sha256_file(model)
    assert enc.MiniLMEncoder(model, vocab_path=vocab, expected_sha256=digest).dim == 384
    with pytest.raises(ModelFileError, match="checksum mismatch"):
        enc.MiniLMEncoder(model, expected_sha256="0" * 64)


def test_a_vocabulary_that_is_not_wordpiece_is_refused(own_model: tuple, tmp_path) -> None:
    _, model, _ = own_model
    words = tmp_path / "words.txt"
    words.write_text("cup\nmug\n", encoding="utf-8")
    with pytest.raises(ModelFileError, match="not a BERT WordPiece vocabulary"):
        enc.MiniLMEncoder(model, vocab_path=words)
    with pytest.raises(ModelFileError, match="cannot read the vocabulary"):
        enc.MiniLMEncoder(model, vocab_path=tmp_path / "absent.txt")


def test_the_encoder_table_of_a_toml_config(own_model: tuple) -> None:
    from locimem.config import TrackerConfig

    folder, _, _ = own_model
    config = folder / "robot.toml"
    config.write_text('[belief]\ntau_s = 20.0\n[encoder]\nmodel_path = "my-encoder.onnx"\n'
                      'vocab_path = "vocab.txt"\nthreads = 1\nmax_length = 64\n')
    encoder = enc.encoder_from_toml(config)  # paths from the config's folder
    assert isinstance(encoder, enc.MiniLMEncoder) and encoder.max_length == 64
    assert TrackerConfig.from_toml(config).tau_s == 20.0  # the tracker reads its own table
    plain = folder / "plain.toml"
    plain.write_text("[belief]\ntau_s = 20.0\n")
    assert enc.encoder_from_toml(plain) is None
    bad = folder / "bad.toml"
    bad.write_text('[encoder]\nmodel = "bert-large"\n')
    with pytest.raises(InvalidInput, match=r"bad.toml: \[encoder\] model must be"):
        enc.encoder_from_toml(bad)
    bad.write_text("[encoder]\nthreads = 0\n")
    with pytest.raises(InvalidInput, match=r"bad.toml: \[encoder\] threads = 0 is out of range: "
                       r"must be within \[1, 256\]$"):
        enc.encoder_from_toml(bad)
    bad.write_text("[encoder]\ngpu = true\n")
    with pytest.raises(InvalidInput, match=r"\[encoder\] has no setting 'gpu'"):
        enc.encoder_from_toml(bad)
