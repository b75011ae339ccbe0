"""Runs that survive a restart where the disk does not (a Space without persistent storage): the store
is exported, as scrubbed as it is kept, to a folder that huggingface_hub's CommitScheduler pushes to a
private dataset repo on a schedule; at start the last export is read back from that repo."""
from __future__ import annotations

import logging
from pathlib import Path

from huggingface_hub import CommitScheduler
from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError

from r2mad.runs.io import export_jsonl, import_jsonl
from r2mad.runs.store import RunStore

log = logging.getLogger("r2mad.runs")
EXPORT_NAME = "runs.jsonl"


class RunsBackup(CommitScheduler):
    """Pushes the store's export (runs, annotations and their history) every `every_min` minutes, and
    once more when the process exits."""

    def __init__(self, store: RunStore, repo_id: str, *, every_min: float, token: str | None = None,
                 hf_api=None):
        self.store = store
        super().__init__(repo_id=repo_id, repo_type="dataset", folder_path=store.path.parent / "backup",
                         every=every_min, private=True, token=token, hf_api=hf_api)

    def push_to_hub(self):
        with self.lock:
            export_jsonl(self.store, self.folder_path / EXPORT_NAME)
        return super().push_to_hub()


def restore(store: RunStore, repo_id: str, *, token: str | None = None, hf_api=None) -> int:
    """Import the repo's last export into the store (runs already here stay unless the export's copy
    is newer); 0 for a repo without one yet."""
    if hf_api is None:
        from huggingface_hub import HfApi
        hf_api = HfApi(token=token)
    try:
        path = hf_api.hf_hub_download(repo_id=repo_id, filename=EXPORT_NAME, repo_type="dataset",
                                      local_dir=store.path.parent / "restored")
    except (EntryNotFoundError, RepositoryNotFoundError):
        return 0
    return import_jsonl(store, Path(path))


def start_backup(store: RunStore, repo_id: str, *, every_min: float, token: str | None = None,
                 hf_api=None) -> RunsBackup | None:
    """Read the runs back, then push them on a schedule. Reading first matters: the first push
    happens at once and would otherwise replace the repo's runs with an empty export. A failure is
    one logged sentence; the app runs on without the backup."""
    if not token and hf_api is None:
        log.warning("Runs are not backed up to %s: set the HF_TOKEN secret (with write access) for it.", repo_id)
        return None
    try:
        count = restore(store, repo_id, token=token, hf_api=hf_api)
        log.info("Read %d runs back from %s.", count, repo_id)
        return RunsBackup(store, repo_id, every_min=every_min, token=token, hf_api=hf_api)
    except Exception as exc:  # the Hub unreachable or the token without access: the app runs on
        message = str(exc).replace(token, "[redacted]") if token else str(exc)
        log.warning("Runs are not backed up to %s (%s); check the repo id and that HF_TOKEN can write to it.",
                    repo_id, message)
        return None
