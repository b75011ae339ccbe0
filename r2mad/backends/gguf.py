"""An embedded backbone's GGUF named by Hugging Face Hub repo and file (configs/backbones.yaml: gguf_repo, gguf_file,
gguf_sha256): downloaded into the Hugging Face cache on first use by huggingface_hub's hf_hub_download (which shows
its progress bar), checked against the configured sha256 before llama.cpp may load it, and found in the cache
afterwards, offline too. `python -m r2mad.backends.gguf NAME` fetches and checks one ahead of time (or, for a
backbone that names no sha256 yet, prints the downloaded file's)."""
from __future__ import annotations

import hashlib
import logging
import threading
from pathlib import Path

from huggingface_hub import hf_hub_download

from r2mad.backends.base import BackendError

log = logging.getLogger(__name__)
_checked: dict[Path, str] = {}  # files whose sha256 this process has computed
_lock = threading.Lock()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def hub_gguf(name: str, repo: str, filename: str, sha256: str | None, revision: str | None = None) -> Path:
    """The local path of the backbone's GGUF, downloaded on first use and checked against `sha256`; a file that
    does not match is refused in one sentence and never loaded. A backbone that names no sha256 is refused before
    anything is downloaded."""
    if not sha256:
        raise BackendError(f"Backbone '{name}' names no gguf_sha256, so its model file is not downloaded; copy the "
                           f"SHA256 from the page of {filename} on huggingface.co into configs/backbones.yaml (or run "
                           f"`python -m r2mad.backends.gguf {name}` to download it and print its sha256).")
    return fetch(name, repo, filename, sha256, revision)[0]


def fetch(name: str, repo: str, filename: str, sha256: str | None, revision: str | None = None) -> tuple[Path, str]:
    """(path, its sha256): the file downloaded (or found in the cache) and, when `sha256` is given, checked."""
    log.info("Embedded backbone %s: fetching %s from %s (downloaded into the Hugging Face cache on first use)",
             name, filename, repo)
    try:
        path = Path(hf_hub_download(repo_id=repo, filename=filename, revision=revision))
    except Exception as exc:  # offline and not cached, no such repo or file, a network error
        raise BackendError(f"The model file {filename} of {repo} could not be downloaded for backbone '{name}' "
                           f"({type(exc).__name__}); check gguf_repo and gguf_file in configs/backbones.yaml and the "
                           "network, or choose another backbone.", transient=True) from None
    with _lock:
        actual = _checked.get(path)
    if actual is None:
        actual = file_sha256(path)
        with _lock:
            _checked[path] = actual
    if sha256 and actual.lower() != sha256.lower():
        raise BackendError(f"The downloaded {filename} of {repo} does not match backbone '{name}''s gguf_sha256 "
                           f"(expected {sha256[:12]}…, got {actual[:12]}…) and was not used; correct gguf_sha256 in "
                           "configs/backbones.yaml, or delete the file from the Hugging Face cache to download it "
                           "again.")
    return path, actual


def main() -> None:
    import argparse

    from r2mad.settings.config import load_config

    parser = argparse.ArgumentParser(description="Download an embedded backbone's GGUF and check its sha256.")
    parser.add_argument("backbone", help="a backbone of configs/backbones.yaml with gguf_repo and gguf_file")
    spec = load_config().backbone(parser.parse_args().backbone)
    if not spec.gguf_repo:
        raise SystemExit(f"Backbone '{spec.name}' names no gguf_repo; it needs no download.")
    try:
        path, actual = fetch(spec.name, spec.gguf_repo, spec.gguf_file, spec.gguf_sha256, spec.gguf_revision)
    except BackendError as exc:
        raise SystemExit(str(exc)) from None
    if spec.gguf_sha256:
        print(f"{spec.name}: {path} (sha256 checked)")
    else:
        print(f"{spec.name}: {path} has sha256 {actual}; if it matches the file's page on huggingface.co, put it in "
              "configs/backbones.yaml as gguf_sha256.")


if __name__ == "__main__":
    main()
