"""Which files of a submission are graded: the exercise a file is, and one notebook per exercise.

The rule, for each exercise a submission holds files of (by name, :func:`exercise_of`):

* one file: it is graded;
* a *jupytext pair*, the same name once as ``.md`` and once as ``.ipynb`` (the text notebook
  and the copy JupyterLab saves beside it): the ``.md`` is graded, the ``.ipynb`` is not;
* anything else (two copies, a draft beside the final, a pair and a third file): that exercise
  is not graded, and its report lists the files, so the student can hand in one.

Files are never added up: a student earns at most an exercise's marks once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from . import key

__all__ = ["Clash", "exercise_of", "is_candidate", "one_per_exercise"]


def exercise_of(path: Path) -> key.Exercise | None:
    """The exercise a file is, by its name: ``ex3_70b_budget.md`` or ``ex3-anything.ipynb``."""
    for ex in key.EXERCISES.values():
        if path.stem == ex.stem:
            return ex
    m = re.match(r"(ex\d+)[_\-\s.]", path.name)
    return key.EXERCISES.get(m.group(1)) if m else None


def is_candidate(path: Path) -> bool:
    """A notebook by its name, whatever it is (a link or a special file is refused later, by name)."""
    return path.suffix in (".md", ".ipynb") and (path.is_symlink() or not path.is_dir())


@dataclass(frozen=True)
class Clash:
    """An exercise handed in as more than one notebook, none of which is graded."""

    exercise: str  # its key, e.g. "ex2"
    files: tuple[Path, ...]  # sorted

    def message(self, shown=str) -> str:
        """What the report says; ``shown`` turns a file name into text."""
        names = ", ".join(shown(f.name) for f in self.files)
        return (
            f"not graded: {len(self.files)} notebooks for {self.exercise} ({names}); hand in one per exercise "
            "(of a jupytext pair, the .md is graded)"
        )


def _is_pair(files: list[Path]) -> bool:
    return (
        len(files) == 2
        and files[0].parent == files[1].parent
        and files[0].stem == files[1].stem
        and {f.suffix for f in files} == {".md", ".ipynb"}
    )


def one_per_exercise(paths: Iterable[Path]) -> tuple[list[Path], list[Clash]]:
    """(the notebooks to grade, the exercises not graded) of ``paths``, by the module's rule.

    ``paths`` are candidate notebooks; one that is no exercise's is left out. Both lists are in
    the order of the exercises' keys.
    """
    by_exercise: dict[str, list[Path]] = {}
    for path in paths:
        ex = exercise_of(path)
        if ex is not None:
            by_exercise.setdefault(ex.key, []).append(path)
    chosen, clashes = [], []
    for ex_key in sorted(by_exercise, key=lambda k: (len(k), k)):  # ex2 before ex10
        files = sorted(set(by_exercise[ex_key]), key=lambda p: (str(p.parent), p.name))
        if len(files) == 1:
            chosen.append(files[0])
        elif _is_pair(files):
            chosen.append(next(f for f in files if f.suffix == ".md"))
        else:
            clashes.append(Clash(ex_key, tuple(files)))
    return chosen, clashes
