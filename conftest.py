"""Let nbval collect the course's jupytext notebooks (MyST ``.md``) as if they were ``.ipynb``.

``pytest --nbval-lax notebooks exercises solutions`` executes every code cell of every
notebook and fails on any error. ``--nbval`` (strict) compares outputs too; a text notebook
stores none, so strict mode takes the outputs of a reference record when one exists at
``tests/records/<same path>.ipynb`` (written by ``python tests/record_outputs.py PATH``).
Cells tagged ``nbval-ignore-output`` (timings, addresses) are run but never compared.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import warnings
from collections import defaultdict
from pathlib import Path

import pytest

try:  # nbval and jupytext are in the pinned environment; stay importable without them
    import jupytext
    from nbval.plugin import IPyNbCell, IPyNbFile, find_comment_markers, find_metadata_tags
except ImportError:  # pragma: no cover - only outside the course environment
    IPyNbFile = None

ROOT = Path(__file__).resolve().parent
RECORDS = ROOT / "tests" / "records"
NOTEBOOK_DIRS = ("notebooks", "exercises", "solutions")
KERNEL_START_ATTEMPTS = 3  # kernels started for a notebook before one answers


def _kernel_never_answered(err: RuntimeError) -> bool:
    """Whether jupyter_client gave up on a kernel before its first reply (it died, or stayed silent)."""
    return any(words in str(err) for words in ("died before replying", "didn't respond"))


def _is_course_notebook(path: Path) -> bool:
    try:
        rel = path.resolve().relative_to(ROOT)
    except ValueError:
        return False
    return path.suffix == ".md" and rel.parts[0] in NOTEBOOK_DIRS and len(rel.parts) == 2


def _shown(path: Path) -> str:
    """A path relative to the repository where it lies inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


@pytest.fixture(scope="module")
def gpu_check():
    """``tools/gpu_check.py`` loaded as a module (a script, not part of the package), once per test file."""
    spec = importlib.util.spec_from_file_location("gpu_check_under_test", ROOT / "tools" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def once_per_run(tmp_path_factory):
    """``once_per_run(name, compute)``: ``compute(folder)`` run once per test run, its JSON result shared.

    Under pytest-xdist each worker process has its own session fixtures, so an expensive
    session fixture would run once per worker. The first worker to ask runs ``compute`` under a
    file lock in the run's shared temporary folder and writes its result there; the others wait
    for the lock and read it. (xdist's ``--dist loadgroup`` was the other way to share such a
    fixture, but it silently stopped grouping with pytest 9.2.) ``compute`` gets a fresh folder
    and returns something ``json.dumps`` takes.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the folder every worker's own temporary folder lies in

    def run_once(name: str, compute):
        result = root / f"once-{name}.json"
        with open(root / f"once-{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also on an error
            if not result.exists():
                result.write_text(json.dumps(compute(tmp_path_factory.mktemp(name))))
        return json.loads(result.read_text())

    return run_once


#: Session fixtures computed once per run (``once_per_run``) that several tests read.
SHARED_ONCE = ("graded_class", "attacked", "fair_class")


def pytest_collection_modifyitems(config, items):
    """The tests that read a once-per-run fixture run first, together.

    xdist's worksteal hands each worker a contiguous half of the collection and steals from the
    end of a queue, so tests at the front stay with the first worker: it grades each class once
    while the other worker runs the rest. Spread through the collection, both workers reached the
    graded class together and one waited about 16 s on the lock, a core idle.
    """
    first = [item for item in items if any(name in getattr(item, "fixturenames", ()) for name in SHARED_ONCE)]
    if first:
        chosen = set(map(id, first))
        items[:] = first + [item for item in items if id(item) not in chosen]


def record_path(path: Path) -> Path:
    """Where the reference record of a text notebook lives."""
    rel = path.resolve().relative_to(ROOT)
    return RECORDS / rel.with_suffix(".ipynb")


def read_notebook(path: Path, *, with_record: bool = True):
    """Read a jupytext notebook, with outputs from its reference record when it has one.

    Only strict mode compares outputs, so only strict mode needs the record (``with_record``);
    a lax run never fails because a record is stale.
    """
    nb = jupytext.read(path)
    record = record_path(path)
    if with_record and record.exists():
        import nbformat

        ref = nbformat.read(str(record), as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        ref_code = [c for c in ref.cells if c.cell_type == "code"]
        if [c.source for c in code] != [c.source for c in ref_code]:
            raise pytest.UsageError(
                f"the reference record {_shown(record)} is stale: its code cells differ "
                f"from {_shown(path)}; re-record it with tests/record_outputs.py"
            )
        for cell, ref_cell in zip(code, ref_code):
            cell.outputs = ref_cell.outputs
            cell.execution_count = ref_cell.execution_count
    return nb


if IPyNbFile is not None:

    class JupytextNbFile(IPyNbFile):
        """nbval's notebook collector, reading the text format through jupytext."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            # Images are never compared (they change with any library version) and the records
            # store none (tests/record_outputs.py strips them): skip every image mime, also
            # those myst-nb's glue stores figures under.
            images = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
            self.skip_compare = (
                self.skip_compare + images + tuple(f"application/papermill.record/{mime}" for mime in images)
            )

        def setup(self):
            # A kernel that dies or stays silent before its first reply has run no cell. Causes
            # seen: a lost race for one of its TCP ports (drawn from the range outgoing connections
            # use), likelier when test processes start kernels side by side, and ipykernel 7's
            # known hang at start. Start another, as the grader does. (nbval sends the kernel's
            # stderr to /dev/null, so which one it was is not shown.)
            for attempt in range(1, KERNEL_START_ATTEMPTS + 1):
                try:
                    return super().setup()
                except RuntimeError as err:
                    if not _kernel_never_answered(err) or attempt == KERNEL_START_ATTEMPTS:
                        raise
                    warnings.warn(f"{_shown(Path(str(self.fspath)))}: {err}; starting another kernel", stacklevel=1)

        def collect(self):
            self.nb = read_notebook(Path(str(self.fspath)), with_record=self.compare_outputs)
            cell_num = 0
            for cell in self.nb.cells:
                if cell.cell_type != "code":
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    options = defaultdict(bool, find_metadata_tags(cell.metadata))
                    options.update(dict(find_comment_markers(cell.source)))
                options.setdefault("check", self.compare_outputs)
                yield IPyNbCell.from_parent(
                    self, name=f"Cell {cell_num}", cell_num=cell_num, cell=cell, options=options
                )
                cell_num += 1

    def pytest_collect_file(file_path, parent):
        opt = parent.config.option
        if (getattr(opt, "nbval", False) or getattr(opt, "nbval_lax", False)) and _is_course_notebook(Path(file_path)):
            return JupytextNbFile.from_parent(parent, path=file_path)
        return None
