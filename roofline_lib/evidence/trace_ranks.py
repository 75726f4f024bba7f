"""A folder of rank traces: each rank diagnosed, and the ranks set side by side.

A distributed job writes one Kineto trace per rank. Each is diagnosed on its own
(:func:`roofline_lib.evidence.diagnose.diagnose`); :func:`diagnose_ranks` then says what only the
ranks together show, as HTA's multi-rank analyses do: the slowest rank (the longest kernel window
per step), the spread of idle and exposed communication time across ranks, and who waits for whom.
In a collective every rank waits for the last one to arrive, so the rank that spends the *least*
time in its collectives is the one the others wait for -- the straggler -- and the time the others
spend there beyond it is waiting, not moving data.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..core.formatting import seconds as _fmt_seconds
from . import traces
from .trace_rows import read_trace

__all__ = ["RankDiagnosis", "RankSummary", "rank_files", "diagnose_ranks"]

_TRACE_SUFFIXES = (".json", ".json.gz", ".pt.trace.json", ".pt.trace.json.gz")
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class RankDiagnosis:
    """One rank: its number, its file, its diagnosis, its kernel window and the steps it spans."""

    rank: int
    path: str
    diagnosis: object
    window_seconds: float
    steps: int

    @property
    def seconds_per_step(self) -> float:
        return self.window_seconds / max(self.steps, 1)

    def pile_seconds(self, pile: str) -> float:
        return self.diagnosis.seconds[pile]


@dataclass(frozen=True)
class RankSummary:
    """Every rank's diagnosis and what the ranks show together.

    ``slowest`` is the rank with the longest kernel window per step; ``straggler`` the rank with the
    least exposed communication time (the one the others wait for in their collectives, None when no
    rank ran a collective); ``spread`` maps "overhead" (idle) and "communication" to the
    ``(least, most)`` seconds per step across the ranks.
    """

    ranks: tuple[RankDiagnosis, ...]
    slowest: int
    straggler: int | None
    spread: dict

    def lines(self) -> list[str]:
        """The summary in words, one line per finding, then one line per rank."""
        slow = self._rank(self.slowest)
        fast = min(self.ranks, key=lambda r: r.seconds_per_step)
        out = [
            f"{len(self.ranks)} ranks; slowest: rank {slow.rank}, {_fmt_seconds(slow.seconds_per_step)} of kernel "
            f"window per step (fastest: rank {fast.rank}, {_fmt_seconds(fast.seconds_per_step)})"
        ]
        for pile, what in (("overhead", "idle"), ("communication", "exposed communication")):
            least, most = self.spread[pile]
            out.append(f"{what} per step: {_fmt_seconds(least)} to {_fmt_seconds(most)} across the ranks")
        if self.straggler is not None:
            s = self._rank(self.straggler)
            waits = [r for r in self.ranks if r.rank != s.rank]
            most = max(waits, key=lambda r: r.pile_seconds("communication") / max(r.steps, 1)) if waits else s
            out.append(
                f"who waits for whom: rank {s.rank} spends the least time in its collectives "
                f"({_fmt_seconds(s.pile_seconds('communication') / max(s.steps, 1))} per step), so the others wait "
                f"for it there -- up to {_fmt_seconds((most.pile_seconds('communication') - s.pile_seconds('communication')) / max(most.steps, 1))} "
                f"per step on rank {most.rank}: speed rank {s.rank} up (its verdict: {s.diagnosis.regime}) before the link"
            )
        for r in self.ranks:
            shares = ", ".join(f"{p} {v:.0%}" for p, v in r.diagnosis.shares.items() if v >= 0.005)
            out.append(f"rank {r.rank}: {r.diagnosis.regime} ({shares}) -- {os.path.basename(r.path)}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def _rank(self, rank: int) -> RankDiagnosis:
        return next(r for r in self.ranks if r.rank == rank)


def rank_files(folder) -> list[str]:
    """The trace files directly inside ``folder`` (``.json`` or ``.json.gz``), sorted by name.

    Raises ValueError when ``folder`` is not a folder or holds no trace file.
    """
    path = Path(os.fspath(folder))
    if not path.is_dir():
        raise ValueError(f"{str(path)!r} is not a folder of rank traces: pass a folder, or one trace file")
    found = sorted(str(p) for p in path.iterdir() if p.is_file() and p.name.endswith(_TRACE_SUFFIXES))
    if not found:
        raise ValueError(
            f"the folder {str(path)!r} holds no trace file (*.json or *.json.gz): pass the folder "
            "torch.profiler.tensorboard_trace_handler or prof.export_chrome_trace wrote each rank's trace to"
        )
    return found


def _rank_of(raw: dict, path: str, index: int) -> int:
    """A trace's rank: its ``distributedInfo``, else a ``rank<N>`` in its file name, else its place."""
    info = raw.get("distributedInfo") or {}
    if isinstance(info.get("rank"), int):
        return info["rank"]
    m = _RANK_IN_NAME.search(os.path.basename(path))
    return int(m.group(1)) if m else index


def diagnose_ranks(folder, *, diagnose=None, **options) -> RankSummary:
    """Diagnose every rank trace in ``folder`` and set the ranks side by side.

    ``options`` go to each rank's diagnosis (``roof=``, ``precision=``, ``link=``); ``diagnose`` is the
    function that diagnoses one trace (by default :func:`roofline_lib.evidence.diagnose.diagnose`).
    Raises ValueError for a folder without traces, or two files of the same rank.
    """
    if diagnose is None:
        from .diagnose import diagnose
    ranks = []
    for index, path in enumerate(rank_files(folder)):
        raw = traces.load_trace(path)
        rank = _rank_of(raw, path, index)
        trace = read_trace(raw)
        d = diagnose(trace, **options)
        ranks.append(RankDiagnosis(rank, path, d, trace.window_seconds or 0.0, trace.steps or 1))
    seen: dict[int, str] = {}
    for r in ranks:
        if r.rank in seen:
            raise ValueError(
                f"two traces of rank {r.rank} in the folder: {os.path.basename(seen[r.rank])} and "
                f"{os.path.basename(r.path)}; keep one trace per rank"
            )
        seen[r.rank] = r.path
    ranks.sort(key=lambda r: r.rank)
    return _summary(tuple(ranks))


def _summary(ranks: tuple[RankDiagnosis, ...]) -> RankSummary:
    """Step: the slowest rank, the straggler and the spreads, from the ranks' diagnoses."""
    slowest = max(ranks, key=lambda r: r.seconds_per_step).rank
    comm = {r.rank: r.pile_seconds("communication") / max(r.steps, 1) for r in ranks}
    straggler = min(comm, key=comm.get) if any(comm.values()) and len(ranks) > 1 else None
    spread = {}
    for pile in ("overhead", "communication"):
        per_step = [r.pile_seconds(pile) / max(r.steps, 1) for r in ranks]
        spread[pile] = (min(per_step), max(per_step))
    return RankSummary(ranks, slowest, straggler, spread)
