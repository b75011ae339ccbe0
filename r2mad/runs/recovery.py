"""How the run store loses nothing: a debate's saves that meet a lock or a full disk are retried at the next
round; a finished debate the store cannot take is kept in a recovery file (or in memory) and imported at the
next write that succeeds, and runs whose process ended are marked."""
from __future__ import annotations

import json
from contextlib import suppress
from typing import Callable

from r2mad.runs.faults import StoreError, StoreFailed, lost_on_restart, recovery_files, write_recovery
from r2mad.runs.merge import merge_records, read_records
from r2mad.runs.records import dumps
from r2mad.types import Transcript


class Recovering:
    """The recovery methods of the RunStore (store.py), which gives `transaction`, `save_transcript`,
    `set_status`, `mark_interrupted`, `_outcome` and the state its __init__ sets."""

    def recorder(self, run_id: str) -> Callable[[Transcript], None]:
        """A debate's `record` hook (see runner.run_debate) for this run: saved each time a round
        finishes, and whole (a stopped round included, for its cost) when the debate ends. A save in
        the middle that meets a lock or a fault is retried at the next round; if the debate ends still
        unsaved, its transcript is kept (see _keep) and `notices` says where, never raised."""
        tried = [0]  # finished rounds in the last save tried: a failed one waits for the next round

        def record(t: Transcript) -> None:
            if t.status == "running" and len(t.finished().rounds) == tried[0]:
                return
            final = t.status != "running"
            tried[0] = len(t.finished().rounds)
            try:
                self.save_transcript(run_id, t if final else t.finished(), t.status, wait=final)
            except StoreError as exc:
                if final:
                    self._keep(run_id, t, exc)
            else:
                if final:
                    self._started.pop(run_id, None)
        return record

    def _keep(self, run_id: str, t: Transcript, exc: StoreError) -> None:
        """A finished debate the store could not take: marked failed when the store lets us, its export
        record written to a recovery folder (or kept in memory), imported at the next write or opening."""
        with suppress(StoreError):  # a full database may still take this small change
            self.set_status(run_id, "failed", f"not saved: {exc.problem}; its transcript was kept in a "
                                              "recovery file and is saved when the store can take it", wait=False)
        record = {**self._started.pop(run_id, {"id": run_id}), **self._outcome(t, t.status), "annotations": []}
        record["transcript"] = json.loads(record["transcript"])
        self._behind = True
        try:
            path = write_recovery(self.recovery_dirs, run_id, record)
            where = f"kept in {path}" + (" (the system's temp folder, which a restart may lose: free space "
                                         "beside the store soon)" if lost_on_restart(path) else "")
        except OSError:
            self._unsaved[run_id] = record
            where = "kept in memory only (no disk took it)"
        self.notices.append(f"{exc.problem}, so run {run_id[:8]} was {where} and is saved when the store can "
                            f"take it; {exc.fix}.")

    def unsaved(self, run_ids) -> list[str]:
        """Of `run_ids`, those kept for later (a recovery file, or memory) that the store does not hold yet."""
        waiting = {p.stem for p in recovery_files(self.recovery_dirs)} | set(self._unsaved)
        return [r for r in run_ids if r in waiting]

    def _catch_up(self) -> None:
        """What faults put off, once a write succeeds: recovery files and runs kept in memory are imported,
        then runs whose process ended are marked (in that order: a recovered run is no interrupted one)."""
        if not self._catching.acquire(blocking=False):
            return  # already catching up (its own writes come back here)
        try:
            self._behind = False
            for path in recovery_files(self.recovery_dirs):
                try:
                    if path.suffix == ".jsonl":
                        with open(path, "rb") as fh, self.transaction() as conn:
                            merge_records(self, conn, read_records(fh, path), str(path))
                    else:  # a recovery file of an older version: run id, status and transcript
                        data = json.loads(path.read_text(encoding="utf-8"))
                        self.save_transcript(data["run_id"], Transcript.from_json(dumps(data["transcript"])),
                                             data["status"])
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    self.notices.append(f"The recovery file {path} could not be imported ({exc}); it is left "
                                        "there for a look.")
                    continue
                path.unlink(missing_ok=True)  # another process opening the store may have taken it first
            for run_id, record in list(self._unsaved.items()):
                try:
                    with self.transaction() as conn:
                        merge_records(self, conn, [record], f"run {run_id} kept in memory")
                except ValueError as exc:  # cannot be: we made it; said rather than raised into a caller's write
                    self.notices.append(str(exc))
                self._unsaved.pop(run_id)
            self.mark_interrupted(self.stale_after_s)
        except StoreError as exc:
            self._behind = True
            if isinstance(exc, StoreFailed):
                self._note_unwritable(exc)
        finally:
            self._catching.release()

    def _note_unwritable(self, exc: StoreFailed) -> None:
        """Said once per store: later failed writes say their own sentence."""
        if not self._told_unwritable:
            self._told_unwritable = True
            self.notices.append(f"{exc.problem}, so it opens for reading and what waits to be saved (recovery "
                                f"files, interrupted runs) waits until it can be written; {exc.fix}.")

