import pytest


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path, monkeypatch):
    """Every writable path (run store, Qdrant indexes) goes to a temp dir; no test touches the repo."""
    monkeypatch.setenv("R2MAD_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
