"""Runs survive a restart: on a Space with persistent storage the store lives there; without it, runs
and annotations go to a private dataset repo on a schedule (huggingface_hub's CommitScheduler, here
against a local stand-in for the Hub API) and come back at start, scrubbed."""
import concurrent.futures
import dataclasses
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

from huggingface_hub.errors import EntryNotFoundError

from r2mad.runs.backup import EXPORT_NAME, start_backup
from r2mad.runs.store import RunStore
from r2mad.settings.config import load_config
from tests.helpers import STORED_MCQ as MCQ
from tests.helpers import make_transcript

TOKEN_IN_QUESTION = "hf_" + "QuestionCarriedAToken" + "9" * 12  # token-shaped, built


class LocalHub:
    """The part of huggingface_hub.HfApi the backup uses, keeping repos in a local folder."""

    def __init__(self, root: Path):
        self.root, self.commits, self.private = root, [], {}
        self.pool = concurrent.futures.ThreadPoolExecutor(1)

    def create_repo(self, repo_id, *, private=None, repo_type=None, exist_ok=False):
        (self.root / repo_id).mkdir(parents=True, exist_ok=True)
        self.private[repo_id] = private
        return SimpleNamespace(repo_id=repo_id)

    def run_as_future(self, fn, *args, **kwargs):
        return self.pool.submit(fn, *args, **kwargs)

    def create_commit(self, *, repo_id, repo_type, operations, commit_message, revision=None):
        for op in operations:
            (self.root / repo_id / op.path_in_repo).write_bytes(op.path_or_fileobj.read())
        self.commits.append((repo_id, [op.path_in_repo for op in operations]))
        return SimpleNamespace(oid=str(len(self.commits)))

    def hf_hub_download(self, *, repo_id, filename, repo_type, local_dir):
        source = self.root / repo_id / filename
        if not source.is_file():
            raise EntryNotFoundError(f"{filename} is not in {repo_id}")
        Path(local_dir).mkdir(parents=True, exist_ok=True)
        return str(shutil.copy(source, Path(local_dir) / filename))


def save_one(store: RunStore, question: str) -> str:
    task = dataclasses.replace(MCQ, question=question)
    run_id = store.start_run(method="mad", backbone="fake", bank=None, task=task, settings={}, seed=0,
                             code_version="test", owner="browser:" + "a" * 32)
    store.recorder(run_id)(make_transcript(task, [["A", "B"], ["B", "B"]], "B", True))
    return run_id


def test_on_a_space_with_persistent_storage_the_store_lives_there(tmp_path):
    from r2mad.serving.services import Services

    persistent = tmp_path / "data"
    persistent.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "R2MAD_DATA_DIR"}
    env.update(SPACE_ID="someone/r2mad-studio", R2MAD_PERSISTENT_ROOT=str(persistent))
    config = load_config(env=env)
    assert Path(config.app.data_dir) == persistent / "r2mad"
    run_id = save_one(Services(config).store, "Kept across restarts?")
    restarted = Services(load_config(env=env))  # a new process on the same disk
    assert restarted.store.get_run(run_id).status == "done"
    env.pop("SPACE_ID")  # a local install keeps its var/ folder
    assert load_config(env=env).app.data_dir == "var"


def test_without_persistent_storage_runs_go_to_a_private_dataset_and_come_back(tmp_path):
    hub = LocalHub(tmp_path / "hub")
    store = RunStore(tmp_path / "one" / "runs.sqlite")
    first = save_one(store, f"Largest planet? (token {TOKEN_IN_QUESTION})")
    store.annotate(first, annotator="ann", labels=["other"], note="checked")
    backup = start_backup(store, "owner/r2mad-runs", every_min=60, hf_api=hub)
    backup.trigger().result(timeout=300)  # after the push made at start
    pushed = (tmp_path / "hub" / "owner" / "r2mad-runs" / EXPORT_NAME).read_text()
    assert hub.private["owner/r2mad-runs"] is True and first in pushed
    assert TOKEN_IN_QUESTION not in pushed and "[redacted]" in pushed
    second = save_one(store, "Smallest planet?")
    backup.trigger().result(timeout=300)  # the next scheduled push
    backup.stop()
    # a restart on a fresh disk: the runs and the annotation are read back before anything is pushed
    fresh = RunStore(tmp_path / "two" / "runs.sqlite")
    again = start_backup(fresh, "owner/r2mad-runs", every_min=60, hf_api=hub)
    again.trigger().result(timeout=300)
    again.stop()
    assert {r.id for r in fresh.list_runs()} == {first, second}
    assert [(a.annotator, a.note) for a in fresh.get_run(first).annotations] == [("ann", "checked")]
    assert fresh.get_run(first).owner == "browser:" + "a" * 32  # still only its visitor's
    assert second in (tmp_path / "hub" / "owner" / "r2mad-runs" / EXPORT_NAME).read_text()


def test_a_repo_without_an_export_yet_starts_empty_and_a_missing_token_is_one_logged_sentence(tmp_path, caplog):
    store = RunStore(tmp_path / "runs.sqlite")
    backup = start_backup(store, "owner/new-repo", every_min=60, hf_api=LocalHub(tmp_path / "hub"))
    backup.trigger().result(timeout=300)
    backup.stop()
    assert store.count_runs() == 0
    assert start_backup(store, "owner/new-repo", every_min=60, token=None) is None
    assert "set the HF_TOKEN secret" in caplog.text
