"""The Parquet annotation dataset: export -> import into an empty store is lossless, the card lists
the taxonomy and the agreement figures, the CLI does both, and the Hub calls keep their contract."""
from __future__ import annotations

import shutil

import pyarrow.parquet as pq
import pytest

from r2mad.annotation.book import LabelBook
from r2mad.exports.dataset import LABEL_COLUMNS, pull_dataset, push_dataset, read_dataset, write_dataset
from r2mad.runs.io import export_records
from r2mad.runs.store import RunStore
from tests.helpers import HF_SECRET as SECRET
from tests.helpers import STORED_MCQ as MCQ
from tests.helpers import make_transcript, save_run


def annotated(path):
    """Three runs; ana and bo label two of them (disagreeing on one), ana adjudicates one."""
    store = RunStore(path, secrets=lambda: [SECRET])
    book = LabelBook(store)
    flipped = save_run(store, make_transcript(MCQ, [["A", "B", "B"], ["B", "B", "B"]], "B", False))
    messy = save_run(store, make_transcript(MCQ, [["B", None, "A"], ["B", "B", "A"]], "B", False))
    save_run(store, make_transcript(MCQ, [["A", "A"]], "A", True, text=f"key {SECRET} "))
    book.detect()
    book.save_labels(flipped, "ana", ["majority_persuaded_correct_agent"], note="agent 1 caved")
    book.save_labels(flipped, "bo", ["majority_persuaded_correct_agent"])
    book.save_labels(messy, "ana", ["parse_failure", "other"], blame={"other": {"round": 1, "agent": 2}})
    book.save_labels(messy, "ana", ["parse_failure"])  # an edit: history kept
    book.save_labels(messy, "bo", ["parse_failure", "shared_misconception_unrecovered"])
    book.set_final(messy, ["parse_failure", "shared_misconception_unrecovered"], "ana",
                   blame={"parse_failure": {"round": 0, "agent": 1}})
    return book, flipped, messy


def snapshot(book):
    suggestions = sorted((s.run_id, s.label, s.detector, s.round, s.agents, s.summary, str(s.evidence),
                          str(s.reviews)) for s in book.suggestions())
    return export_records(book.store), suggestions, book.finals()


def test_export_then_import_is_lossless_and_the_card_has_the_figures(tmp_path):
    book, flipped, messy = annotated(tmp_path / "a.db")
    counts = write_dataset(book, tmp_path / "ds")
    labels = pq.read_table(tmp_path / "ds" / "labels.parquet")
    assert tuple(labels.column_names) == LABEL_COLUMNS
    rows = labels.to_pylist()
    # human: ana 1 + bo 1 on flipped, ana 1 + bo 2 on messy; final: 2; detector: 3 + 2
    assert {k: sum(r["kind"] == k for r in rows) for k in ("human", "detector", "final")} == \
        {"human": 5, "detector": 5, "final": 2}
    assert counts == {"runs": 3, "labels": 12, "votes": 0}
    blamed = [r for r in rows if r["kind"] == "human" and r["run"] == messy and r["annotator"] == "ana"]
    assert [(r["label"], r["round"], r["agent"]) for r in blamed] == [("parse_failure", 0, 1)]
    persuaded = next(r for r in rows if r["kind"] == "detector" and r["label"] == "majority_persuaded_correct_agent")
    assert persuaded["agents"] == [0, 1, 2] and '"from": "A"' in persuaded["evidence"]
    assert '"ana": "confirmed"' in persuaded["reviews"]
    raw = b"".join(p.read_bytes() for p in (tmp_path / "ds").iterdir())
    assert SECRET.encode() not in raw

    card = (tmp_path / "ds" / "README.md").read_text()
    assert "data_files: labels.parquet" in card and "| `stalled_split` |" in card
    assert ("| `mask_removed_correct_answer` | Masking between rounds hid the response that held the correct "
            "answer. | FM-2.4 Information withholding (Inter-agent misalignment) |") in card
    assert "**Caution:** only 2 run(s) were labelled by two or more people" in card  # 2 < MIN_RUNS
    assert {r["label"]: r["mast"] for r in rows}["parse_failure"] == "FM-1.1 Disobey task specification " \
        "(Specification issues)"
    # persuaded: yes/yes on flipped, no/no on messy -> every figure 1.0; 'other' nobody kept -> undefined.
    # shared misconception: no/no on flipped, no/yes on messy. Cohen: po = 0.5, pe = 0*0.5 + 1*0.5 = 0.5
    # -> 0. Fleiss: P = (1 + 0)/2 = 0.5, p(yes) = 1/4, Pe = 1/16 + 9/16 = 0.625 -> -0.125/0.375 = -0.3333.
    # alpha: n = 4, n_0 = 3, n_1 = 1, Do = 2/4, De = 2*3*1/(4*3) = 0.5 -> 0.
    assert "| majority_persuaded_correct_agent | 2 | 1.0000 | 1.0000 | 1.0000 |" in card
    assert "| other | 2 | — | — | — |" in card
    assert "| shared_misconception_unrecovered | 2 | 0.0000 | -0.3333 | 0.0000 |" in card
    # detector parse_failure fired on messy, final has it: precision 1, recall 1 over 1 adjudicated run
    assert "| parse_failure | 1.0000 | 1.0000 | 1 | 0 | 0 |" in card

    fresh = LabelBook(RunStore(tmp_path / "b.db"))
    assert read_dataset(fresh, tmp_path / "ds") == 3
    assert fresh.detect() == 0  # imported suggestions count as current
    assert snapshot(fresh) == snapshot(book)
    assert read_dataset(fresh, tmp_path / "ds") == 0  # twice changes nothing
    write_dataset(fresh, tmp_path / "again")
    for name in ("labels.parquet", "runs.parquet"):
        assert pq.read_table(tmp_path / "again" / name).equals(pq.read_table(tmp_path / "ds" / name))
    with pytest.raises(FileNotFoundError, match="lacks runs.parquet, labels.parquet"):
        read_dataset(fresh, tmp_path / "nothing")


class FakeHub:
    """Stands in for HfApi: records the calls and serves the uploaded folder back."""

    def __init__(self, tmp_path):
        self.calls, self.repo = [], tmp_path / "hub"

    def create_repo(self, repo_id, **kw):
        self.calls.append(("create_repo", repo_id, kw))

    def upload_folder(self, *, folder_path, repo_id, repo_type, commit_message):
        self.calls.append(("upload_folder", repo_id, repo_type))
        shutil.copytree(folder_path, self.repo)

    def snapshot_download(self, *, repo_id, repo_type, local_dir):
        self.calls.append(("snapshot_download", repo_id, repo_type))
        shutil.copytree(self.repo, local_dir)
        return local_dir


def test_hub_push_and_pull_contract(tmp_path):
    book, _, _ = annotated(tmp_path / "a.db")
    write_dataset(book, tmp_path / "ds")
    with pytest.raises(ValueError, match="HF_TOKEN"):
        push_dataset(tmp_path / "ds", "me/labels", None)
    with pytest.raises(ValueError, match="user/name"):
        push_dataset(tmp_path / "ds", "labels", SECRET)
    hub = FakeHub(tmp_path)
    assert push_dataset(tmp_path / "ds", "me/labels", SECRET, api=hub) == "https://huggingface.co/datasets/me/labels"
    assert hub.calls == [("create_repo", "me/labels", {"repo_type": "dataset", "exist_ok": True}),
                         ("upload_folder", "me/labels", "dataset")]
    folder = pull_dataset("me/labels", tmp_path / "down", SECRET, api=hub)
    fresh = LabelBook(RunStore(tmp_path / "b.db"))
    assert read_dataset(fresh, folder) == 3 and snapshot(fresh) == snapshot(book)

    class Broken(FakeHub):
        def upload_folder(self, **kw):
            raise OSError(f"401 for Authorization: Bearer {SECRET}")
    with pytest.raises(RuntimeError, match="token can write") as err:
        push_dataset(tmp_path / "ds", "me/labels", SECRET, api=Broken(tmp_path))
    assert SECRET not in str(err.value)


def test_export_and_import_from_the_command_line(tmp_path, config_dir, capsys):
    from r2mad.cli import main
    from r2mad.settings.config import load_config
    config = load_config(config_dir)
    book = LabelBook(RunStore(config.app.runs_db))
    run = save_run(book.store, make_transcript(MCQ, [["A", "B", "B"], ["B", "B", "B"]], "B", False))
    book.save_labels(run, "ana", ["other"])
    assert main(["--config-dir", str(config_dir), "export", "--out", str(tmp_path / "ds")]) == 0
    # ana's label and 2 detector rows (a bare "I think ((A))" -> "((B))" change is no longer flagged)
    assert "Wrote 1 runs and 3 label rows" in capsys.readouterr().out
    book.store.close()
    config.app.runs_db.unlink()
    assert main(["--config-dir", str(config_dir), "import", str(tmp_path / "ds")]) == 0
    assert "Imported 1 new or newer runs" in capsys.readouterr().out
    assert RunStore(config.app.runs_db).get_run(run).annotations[0].labels == ("other",)
    assert main(["--config-dir", str(config_dir), "export"]) == 2
    assert main(["--config-dir", str(config_dir), "import", str(tmp_path / "nowhere")]) == 2
    assert "No export at" in capsys.readouterr().err


@pytest.mark.slow  # a local HTTP server
def test_cli_pushes_to_and_imports_from_a_hub_over_http(tmp_path, config_dir, capsys, monkeypatch):
    """The real huggingface_hub client against a local stand-in for the Hub's HTTP API."""
    from r2mad.cli import main
    from r2mad.settings.config import load_config
    from tests.hubstandin import HubStandIn
    config = load_config(config_dir)
    book = LabelBook(RunStore(config.app.runs_db))
    run = save_run(book.store, make_transcript(MCQ, [["A", "B", "B"], ["B", "B", "B"]], "B", False))
    book.save_labels(run, "ana", ["other"], note="hub trip")
    book.set_final(run, ["other"], "ana")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_TOKEN", SECRET)
    with HubStandIn() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert main(["--config-dir", str(config_dir), "export", "--hub", "me/debate-labels"]) == 0
        assert f"Pushed to {hub.url}/datasets/me/debate-labels" in capsys.readouterr().out
        assert sorted(hub.repos["me/debate-labels"]) == ["README.md", "labels.parquet", "runs.parquet", "votes.parquet"]
        assert "| other |" in hub.repos["me/debate-labels"]["README.md"].decode()
        writes = [(path.split("/")[-2], auth) for method, path, auth in hub.requests if method == "POST"]
        assert writes == [("repos", f"Bearer {SECRET}"), ("api", f"Bearer {SECRET}"),  # create, validate-yaml
                          ("preupload", f"Bearer {SECRET}"), ("commit", f"Bearer {SECRET}")]
        before = snapshot(book)
        book.store.close()
        config.app.runs_db.unlink()
        assert main(["--config-dir", str(config_dir), "import", "--hub", "me/debate-labels"]) == 0
        assert "Imported 1 new or newer runs from me/debate-labels" in capsys.readouterr().out
        assert snapshot(LabelBook(RunStore(config.app.runs_db))) == before
        assert main(["--config-dir", str(config_dir), "import", "--hub", "me/nothing-here"]) == 1
    err = capsys.readouterr().err
    assert "Downloading dataset me/nothing-here failed" in err and len(err.strip().splitlines()) == 1
