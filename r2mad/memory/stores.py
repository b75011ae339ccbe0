"""Qdrant index adapters for a memory bank: Qdrant Edge shards on disk, or a Qdrant server; no case logic."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

STORES = ("edge", "qdrant-local")  # embedded index kinds; a server is chosen with url=


class IndexStoreError(ValueError):
    """The index cannot be opened; the message names the fix. MemoryBank.open re-raises it as BankError."""


class EdgeStore:
    """One embedded Qdrant Edge shard per agent, in <folder>/agent-<i>."""

    def __init__(self, folder: Path, dim: int):
        import qdrant_edge as qe  # heavy import, only when a bank is opened
        self.qe, self.folder, self.dim, self.shards, self.dirty = qe, folder, dim, {}, set()
        folder.mkdir(parents=True, exist_ok=True)
        for sub in sorted(folder.glob("agent-*")):
            try:
                self.shards[int(sub.name.split("-")[1])] = qe.EdgeShard.load(str(sub))
            except Exception as exc:
                self.close()
                raise IndexStoreError(f"The index {folder} could not be opened ({exc}); close any other "
                                      "process using this bank, or serve it from a Qdrant server with "
                                      "url=.") from None

    def _shard(self, agent: int):
        if agent not in self.shards:
            qe = self.qe
            vectors = {"state": qe.EdgeVectorParams(size=self.dim, distance=qe.Distance.Cosine),
                       "responses": qe.EdgeVectorParams(size=self.dim, distance=qe.Distance.Cosine,
                                                        multivector_config=qe.MultiVectorConfig(
                                                            qe.MultiVectorComparator.MaxSim))}
            self.shards[agent] = qe.EdgeShard.create(str(self.folder / f"agent-{agent}"),
                                                     qe.EdgeConfig(vectors=vectors))
        return self.shards[agent]

    def upsert(self, agent: int, rows: list[tuple[str, np.ndarray, np.ndarray, dict]]) -> None:
        points = [self.qe.Point(pid, {"state": s.tolist(), "responses": r.tolist()}, payload)
                  for pid, s, r, payload in rows]
        self._shard(agent).update(self.qe.UpdateOperation.upsert_points(points))
        self.dirty.add(agent)

    def query(self, agent: int, vector: np.ndarray, limit: int) -> list[tuple[dict, float, Any, Any]]:
        if agent not in self.shards or limit <= 0:
            return []
        qe = self.qe
        hits = self.shards[agent].query(qe.QueryRequest(
            limit=limit, query=qe.Query.Nearest(vector.tolist(), using="state"), with_payload=True,
            with_vector=True, params=qe.SearchParams(exact=True)))
        return [(p.payload, p.score, p.vector["state"], p.vector["responses"]) for p in hits]

    def responses(self, agent: int, pid: str):
        records = self.shards[agent].retrieve([pid], False, ["responses"]) if agent in self.shards else []
        return records[0].vector["responses"] if records else None

    def count(self) -> int:
        return sum(shard.info().points_count for shard in self.shards.values())

    def flush(self) -> None:  # ~30 ms a shard, so only the shards written since the last flush
        for agent in sorted(self.dirty):
            self.shards[agent].flush()
        self.dirty = set()

    def close(self) -> None:
        for shard in self.shards.values():
            shard.close()
        self.shards = {}


class ClientStore:
    """One qdrant-client collection per agent, named <prefix>a<i>: local mode (path) or a server (url)."""

    def __init__(self, client, prefix: str, dim: int):
        from qdrant_client import models
        self.client, self.models, self.prefix, self.dim = client, models, prefix, dim
        names = [c.name for c in client.get_collections().collections]
        self.agents = {int(n[len(prefix) + 1:]) for n in names
                       if n.startswith(prefix + "a") and n[len(prefix) + 1:].isdigit()}

    def _name(self, agent: int) -> str:
        if agent not in self.agents:
            m = self.models
            self.client.create_collection(f"{self.prefix}a{agent}", vectors_config={
                "state": m.VectorParams(size=self.dim, distance=m.Distance.COSINE),
                "responses": m.VectorParams(size=self.dim, distance=m.Distance.COSINE,
                                            multivector_config=m.MultiVectorConfig(
                                                comparator=m.MultiVectorComparator.MAX_SIM),
                                            hnsw_config=m.HnswConfigDiff(m=0))})
            self.agents.add(agent)
        return f"{self.prefix}a{agent}"

    def upsert(self, agent: int, rows: list[tuple[str, np.ndarray, np.ndarray, dict]]) -> None:
        points = [self.models.PointStruct(id=pid, vector={"state": s.tolist(), "responses": r.tolist()},
                                          payload=payload) for pid, s, r, payload in rows]
        self.client.upsert(self._name(agent), points=points, wait=True)

    def query(self, agent: int, vector: np.ndarray, limit: int) -> list[tuple[dict, float, Any, Any]]:
        if agent not in self.agents or limit <= 0:
            return []
        hits = self.client.query_points(f"{self.prefix}a{agent}", query=vector.tolist(), using="state",
                                        limit=limit, with_payload=True, with_vectors=True).points
        return [(p.payload, p.score, p.vector["state"], p.vector["responses"]) for p in hits]

    def responses(self, agent: int, pid: str):
        if agent not in self.agents:
            return None
        records = self.client.retrieve(f"{self.prefix}a{agent}", [pid], with_vectors=["responses"])
        return records[0].vector["responses"] if records else None

    def count(self) -> int:
        return sum(self.client.count(f"{self.prefix}a{a}", exact=True).count for a in self.agents)

    def drop(self) -> None:
        for agent in sorted(self.agents):
            self.client.delete_collection(f"{self.prefix}a{agent}")
        self.agents = set()

    def flush(self) -> None:
        pass  # qdrant-client writes through (local mode commits to SQLite; a server acknowledges)

    def close(self) -> None:
        self.client.close()


def open_local(kind: str, folder: Path, dim: int) -> EdgeStore | ClientStore:
    """The embedded index of kind `kind` (one of STORES) in `folder`."""
    if kind == "edge":
        return EdgeStore(folder / "edge", dim)
    from qdrant_client import QdrantClient
    try:
        client = QdrantClient(path=str(folder / "qdrant"))
    except RuntimeError as exc:  # "already accessed by another instance"
        raise IndexStoreError(f"The index {folder} is open in another process ({exc}); close that process "
                              "or serve the bank from a Qdrant server with url=.") from None
    return ClientStore(client, "", dim)


def open_server(url: str, api_key: str | None, prefix: str, dim: int) -> ClientStore:
    """The collections named <prefix>a<i> on the Qdrant server at `url`; fails fast if it is unreachable."""
    from qdrant_client import QdrantClient
    client = QdrantClient(url=url, api_key=api_key, timeout=5, check_compatibility=False)
    try:
        client.get_collections()
    except Exception as exc:
        client.close()
        raise IndexStoreError(f"The Qdrant server at {url} is unreachable ({type(exc).__name__}); start it, "
                              "fix the url, or leave the url unset to use the embedded index.") from None
    return ClientStore(client, prefix, dim)
