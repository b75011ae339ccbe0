"""An embedded backbone may name its GGUF by Hub repo and file: fetched on first use (here a local stand-in for
huggingface_hub's download), used when its sha256 matches the config, refused in one sentence (and never
loaded) when it does not, and refused before any download when the config names no sha256."""
import asyncio
import hashlib
import shutil

import pytest

from r2mad.backends import gguf
from r2mad.backends.base import BackendError
from r2mad.backends.embedded import EmbeddedBackend, smollm2_path
from r2mad.settings.config import ConfigError, load_config
from r2mad.types import Message


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """hf_hub_download played by a copy from a local folder into a cache folder; records what was asked."""
    source, cache, asked = tmp_path / "hub", tmp_path / "cache", []
    source.mkdir()
    cache.mkdir()

    def download(repo_id, filename, revision=None):
        asked.append((repo_id, filename, revision))
        target = cache / repo_id.replace("/", "--") / filename
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / filename, target)
        return str(target)

    monkeypatch.setattr(gguf, "hf_hub_download", download)
    monkeypatch.setattr(gguf, "_checked", {})
    return source, asked


def test_a_file_whose_sha256_matches_is_used_and_found_again(hub):
    source, asked = hub
    (source / "m.gguf").write_bytes(b"GGUF weights")
    right = hashlib.sha256(b"GGUF weights").hexdigest()
    path = gguf.hub_gguf("tiny", "org/tiny-GGUF", "m.gguf", right)
    assert path.read_bytes() == b"GGUF weights" and path.parent.name == "org--tiny-GGUF"
    assert gguf.hub_gguf("tiny", "org/tiny-GGUF", "m.gguf", right.upper()) == path
    assert asked == [("org/tiny-GGUF", "m.gguf", None)] * 2


def test_a_wrong_checksum_is_refused_in_one_sentence_and_the_model_is_never_started(hub):
    source, _ = hub
    (source / "m.gguf").write_bytes(b"tampered weights")
    wrong = hashlib.sha256(b"GGUF weights").hexdigest()
    with pytest.raises(BackendError) as refused:
        gguf.hub_gguf("tiny", "org/tiny-GGUF", "m.gguf", wrong)
    words = str(refused.value)
    assert "does not match backbone 'tiny''s gguf_sha256" in words and "was not used" in words
    assert words.count(". ") == 0 and words.endswith("download it again.")
    backend = EmbeddedBackend(name="tiny", locate=lambda: gguf.hub_gguf("tiny", "org/tiny-GGUF", "m.gguf", wrong),
                              file_name="m.gguf")
    with pytest.raises(BackendError, match="does not match"):
        asyncio.run(backend.chat([Message("user", "hi")], max_tokens=4))
    assert backend.model_path is None  # nothing was loaded from it


def test_no_sha256_in_the_config_refuses_before_any_download(hub):
    _, asked = hub
    with pytest.raises(BackendError, match="names no gguf_sha256, so its model file is not downloaded"):
        gguf.hub_gguf("tiny", "org/tiny-GGUF", "m.gguf", None)
    assert asked == []


def test_the_config_checks_a_hub_gguf_entry(tmp_path):
    import yaml

    folder = tmp_path / "configs"
    shutil.copytree(load_config().config_dir, folder)
    entry = {"kind": "embedded", "gguf_repo": "org/x", "gguf_file": "x.gguf", "gguf_sha256": "abc"}
    (folder / "backbones.yaml").write_text(yaml.safe_dump({"backbones": {"x": entry}}))
    with pytest.raises(ConfigError, match="x.gguf_sha256 is not a sha256"):
        load_config(folder, env={})
    (folder / "backbones.yaml").write_text(yaml.safe_dump({"backbones": {"x": {**entry, "kind": "openai",
                                                                                "gguf_sha256": "a" * 64}}}))
    with pytest.raises(ConfigError, match="give an embedded backbone both gguf_repo and gguf_file"):
        load_config(folder, env={})
    shipped = load_config().backbone("qwen2.5-0.5b-gguf")  # the shipped stronger model names repo and file
    assert (shipped.kind, shipped.gguf_repo, shipped.gguf_file) == (
        "embedded", "Qwen/Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q4_k_m.gguf")


@pytest.mark.slow  # a real model: the SmolLM2 file served by the stand-in hub, loaded by llama.cpp
def test_a_hub_backbone_with_the_right_sha256_answers_on_the_real_model(hub, tmp_path):
    from r2mad.backends import make_backend
    from r2mad.settings.config import Backbone

    source, asked = hub
    shutil.copyfile(smollm2_path(), source / "smol.gguf")
    spec = Backbone(name="hub-smol", kind="embedded", gguf_repo="org/smol-GGUF", gguf_file="smol.gguf",
                    gguf_sha256=gguf.file_sha256(smollm2_path()), n_ctx=1024)
    backend = make_backend(spec)
    assert backend.describe() == {"kind": "embedded", "model": "smol.gguf"}  # named before any download
    [c] = asyncio.run(backend.chat([Message("user", "Say hello.")], max_tokens=8, seed=1))
    assert c.tokens_out > 0 and backend.model_path.parent.name == "org--smol-GGUF"
    assert asked == [("org/smol-GGUF", "smol.gguf", None)]
