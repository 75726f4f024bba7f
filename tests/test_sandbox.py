"""The attacks a class's most motivated students tried on the grader, each a regression test.

One class of attackers and victims is graded once, in the sandbox (``--submissions``); the
tests read its CSV and JSON. Where this machine cannot start a sandbox the tests say why and
skip (CI's machine can: bubblewrap is installed by ``make install-sandbox``).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import signal
import stat
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import jupytext
import pytest

from roofline_lib.grading import grader, leases, sandbox

ROOT = Path(__file__).resolve().parents[1]
EX2 = "ex2_ridge_points.md"
KEY = ROOT / "roofline_lib" / "grading" / "key"
KEY_FILES = sorted(p.name for p in KEY.glob("*.py"))  # every module of the key: none may be readable
WHY = sandbox.why_unavailable()
needs_sandbox = pytest.mark.skipif(bool(WHY), reason=f"no sandbox on this machine: {WHY}")


def _build(dest: Path, base: Path, replace: dict[str, str] | None = None) -> Path:
    nb = jupytext.read(base)
    for cell in nb.cells:
        for tag in cell.get("metadata", {}).get("tags", []):
            if replace and tag in replace:
                cell.source = replace[tag]
    dest.parent.mkdir(parents=True, exist_ok=True)
    jupytext.write(nb, dest, fmt="md:myst")
    return dest


def _grade(*args, env=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "roofline_lib.cli", "grade", *args],
        cwd=ROOT,
        capture_output=True,
        timeout=timeout,
        env=env,
    )


# Any file of the key, read by path, answers ex2-a (the ridge of GPU P is 1200 / 6 = 200 FLOP/byte):
# the key's folder from the repository's path, from the editable install's finder, or through /proc.
_KEY_BY_PATH = f"""
import glob, re
folders = [{str(KEY)!r}]
for finder in glob.glob("/**/site-packages/__editable__*finder.py", recursive=False) + glob.glob(
        "/*/*/*/lib/python3*/site-packages/__editable__*finder.py"):
    folders += [m + "/grading/key" for m in re.findall(r"'(/[^']*roofline_lib)'", open(finder).read())]
folders += glob.glob("/proc/*/cwd/roofline_lib/grading/key")
stolen = set()
for folder in folders:
    for name in {KEY_FILES!r}:
        try:
            with open(folder + "/" + name) as f:
                if f.read():
                    stolen.add(name)
        except Exception:
            pass
ridge_p = 1200e12 / 6e12 if stolen else ...
"""

# Rewrites the victim's submission and every scratch copy of a submission it can find. (Only
# the victim's own folder by name: a glob over the class would follow the linked students into
# the repository's solutions/ when the class is graded without the sandbox.)
_OVERWRITE = """
import glob
for path in [VICTIM] + glob.glob("/tmp/PREFIX*/*/rw/work/*.md") + glob.glob(
        "/tmp/PREFIX*/*/work/*.md"):
    try:
        open(path, "w").write("# overwritten\\n")
    except OSError:
        pass
ridge_p = ...
""".replace("PREFIX", leases.SCRATCH_PREFIX)

# Finds other kernels' connection files (jupyter_client writes them to the kernel's TMPDIR, in the
# scratch folder) and answers ex2-a in each of them.
_CONNECT = """
import glob, json, time
from jupyter_client import BlockingKernelClient
done, deadline = set(), time.monotonic() + 6
while time.monotonic() < deadline:
    for path in glob.glob("/tmp/PREFIX*/**/*.json", recursive=True):
        if path in done or "shell_port" not in open(path).read():
            continue
        try:
            kc = BlockingKernelClient(connection_file=path)
            kc.load_connection_file()
            kc.start_channels()
            kc.execute("ridge_p = 1200e12 / 6e12")
            time.sleep(0.5)
            kc.stop_channels()
            done.add(path)
        except Exception:
            pass
    time.sleep(0.2)
ridge_p = ...
""".replace("PREFIX", leases.SCRATCH_PREFIX)

# A kernel that waits, so that its neighbour has time to reach it.
_WAIT = "import time\ntime.sleep(5)\nridge_p = ..."

# 8 GiB that are never touched (bytes() asks for zeroed pages): only an address-space limit stops it.
_HOG = "hog = bytes(8 * 2**30)\nridge_p = 1200e12 / 6e12"

_DETACH = """
import subprocess, sys
code = "import os, time\\nif os.fork(): os._exit(0)\\nos.setsid()\\ntime.sleep(60)\\n"
subprocess.Popen([sys.executable, "-c", code, "roofline-sandbox-detached-marker"], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
ridge_p = 1200e12 / 6e12
"""


def _markers() -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and b"roofline-sandbox-detached-marker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


def _the_class(root: Path) -> None:
    sub = root / "submissions"
    solution, stub = ROOT / "solutions" / EX2, ROOT / "exercises" / EX2
    _build(sub / "a_keypath" / EX2, stub, {"answer-ex2-a": _KEY_BY_PATH})
    _build(
        sub / "b_overwrite" / EX2,
        stub,
        {"answer-ex2-a": "VICTIM = " + repr(str(sub / "z_victim" / EX2)) + "\n" + _OVERWRITE},
    )
    _build(sub / "c_connect" / EX2, stub, {"answer-ex2-a": _CONNECT})
    _build(
        sub / "d_waits" / EX2,
        stub,
        {"answer-ex2-a": _WAIT + _breakout(sandbox.LIB, sandbox.SEED, _system_targets(), namespace=True)},
    )
    _build(sub / "e_hog" / EX2, solution, {"answer-ex2-a": _HOG})
    _build(sub / "f_detach" / EX2, solution, {"answer-ex2-a": _DETACH})
    (sub / "g_link_file").mkdir()
    (sub / "g_link_file" / EX2).symlink_to(solution)
    (sub / "h_link_dir").symlink_to(ROOT / "solutions")
    (sub / "i_link_system").mkdir()
    (sub / "i_link_system" / "ex2_ridge_points.ipynb").symlink_to("/etc/hostname")
    os.mkdir(os.fsencode(sub) + b"/j_bad\xff")
    _build(Path(os.fsdecode(os.fsencode(sub) + b"/j_bad\xff")) / EX2, solution)
    _build(sub / "=HYPERLINK(1)" / EX2, solution)
    (sub / "k_garbage").mkdir()
    (sub / "k_garbage" / "ex2_ridge_points.ipynb").write_text("SECRET-LINE-42 {\n")
    _build(sub / "z_victim" / EX2, solution)


def _system_targets() -> list[str]:
    """Files a kernel must not be able to make: in the environment, site-packages, the stdlib, / and /usr."""
    folders = {sys.prefix, sysconfig.get_paths()["purelib"], os.path.dirname(os.__file__), "/", "/usr", "/etc"}
    return [os.path.join(p, "roofline-breakout.pth") for p in sorted(folders)]


def _breakout(lib: str, seed: str, others=(), namespace: bool = False) -> str:
    """A cell that tries to write where the sandbox is read-only (the library, the seed, ``others``),
    to read another student's work and (``namespace``) to make a user namespace of its own;
    ``ridge_p`` is right when any of it worked."""
    targets = [f"{lib}/roofline_lib/observer.py", f"{lib}/roofline_grading_worker.py", f"{seed}/work/{EX2}", *others]
    return f"""
import glob, os
NAMESPACE = {namespace!r}
breaches = []
for path in {targets!r}:
    try:
        with open(path, "a") as f:
            f.write("")
        breaches.append(path)
    except OSError:
        pass
for path in (glob.glob("/proc/*/root/grading/*/work/*.md") + glob.glob("/tmp/{leases.SCRATCH_PREFIX}*/**/*.md", recursive=True)
             + glob.glob("/proc/*/cwd/*.md")):
    try:
        if "ridge_p = P_BF16" + "_FLOPS_PER_S /" in open(path).read():  # a solution (split: not this cell's text)
            breaches.append(path)
    except OSError:
        pass
if NAMESPACE:  # unshare(CLONE_NEWUSER), from a process of one thread (a kernel has several)
    import subprocess, sys
    tried = subprocess.run([sys.executable, "-c", "import ctypes; print(ctypes.CDLL(None).syscall(272, 0x10000000))"],
                           capture_output=True, text=True)
    if tried.stdout.strip() == "0":
        breaches.append("a user namespace of its own, root in it")
ridge_p = 1200e12 / 6e12 if breaches else ...
"""


def _grade_class(tmp: Path) -> dict:
    _the_class(tmp)
    started = time.monotonic()
    proc = _grade(
        "--submissions",
        str(tmp / "submissions"),
        "--workers",
        "2",
        "--time-limit",
        "30",
        "--csv",
        str(tmp / "g.csv"),
        "--json",
        str(tmp / "r.json"),
    )
    return dict(
        returncode=proc.returncode,
        stdout=proc.stdout.decode("utf-8", "backslashreplace"),
        stderr=proc.stderr.decode("utf-8", "replace"),
        elapsed=time.monotonic() - started,
        markers=_markers(),
        csv=(tmp / "g.csv").read_text(encoding="utf-8"),
        report=json.loads((tmp / "r.json").read_text(encoding="utf-8")),
        hostname=Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").exists() else "",
    )


@pytest.fixture(scope="session")
def attacked(once_per_run):
    if WHY:
        pytest.skip(f"no sandbox on this machine: {WHY}")
    return once_per_run("attacked-class", _grade_class)


def _marks(attacked, student: str) -> dict[str, int]:
    s = next(s for s in attacked["report"]["students"] if s["student"] == student)
    return {p["part"]: p["marks"] for nb in s["notebooks"] for p in nb["parts"]}


def _student(attacked, student: str) -> dict:
    return next(s for s in attacked["report"]["students"] if s["student"] == student)


@needs_sandbox
def test_the_attacked_class_is_graded_in_the_sandbox_and_both_reports_land(attacked):
    assert attacked["returncode"] == 1 and "Traceback" not in attacked["stderr"], attacked["stderr"]
    assert attacked["report"]["isolation"].startswith("sandboxed")
    rows = list(csv.reader(io.StringIO(attacked["csv"])))
    assert len(rows) == 1 + 13  # the header, then all thirteen students: none stopped the others
    assert len(attacked["report"]["students"]) == 13


def test_the_key_by_path_attack_reads_every_key_file_where_nothing_hides_them():
    # the attack works: run here, outside any sandbox, it reads each of the key's modules
    assert {"__init__.py", "judges.py", "parts.py", "probes.py", "references.py", "scenarios.py"} <= set(KEY_FILES)
    namespace = {}
    exec(_KEY_BY_PATH, namespace)
    assert namespace["stolen"] == set(KEY_FILES) and namespace["ridge_p"] == 200  # 1200e12 / 6e12


@needs_sandbox
def test_the_key_cannot_be_read_by_path(attacked):
    assert _marks(attacked, "a_keypath")["ex2-a"] == 0  # not one of the key's files could be read


@needs_sandbox
def test_a_kernel_cannot_overwrite_another_submission(attacked):
    assert _marks(attacked, "b_overwrite")["ex2-a"] == 0
    assert _student(attacked, "z_victim")["marks"] == 8  # graded after the attacker ran


@needs_sandbox
def test_a_kernel_cannot_reach_another_kernel(attacked):
    assert _marks(attacked, "c_connect")["ex2-a"] == 0
    assert _marks(attacked, "d_waits")["ex2-a"] == 0  # its kernel waited beside the attacker's


@needs_sandbox
def test_a_memory_hog_is_stopped_at_the_limit_and_only_its_part_lost(attacked):
    marks = _marks(attacked, "e_hog")
    assert marks["ex2-a"] == 0 and sum(marks.values()) == 7  # the other seven parts still count
    part = next(p for nb in _student(attacked, "e_hog")["notebooks"] for p in nb["parts"] if p["part"] == "ex2-a")
    assert "MemoryError" in part["message"]


@needs_sandbox
def test_a_detached_process_is_gone_after_grading(attacked):
    assert _student(attacked, "f_detach")["marks"] == 8
    assert attacked["markers"] == []


@needs_sandbox
def test_links_are_refused_with_a_message_and_nothing_read_through_them(attacked):
    for name in ("g_link_file", "h_link_dir", "i_link_system"):
        s = _student(attacked, name)
        assert s["marks"] == 0 and "symbolic link" in s["problem"], s
    if attacked["hostname"]:
        assert attacked["hostname"] not in json.dumps(attacked["report"])  # the linked file's first line
        assert attacked["hostname"] not in attacked["csv"]


@needs_sandbox
def test_an_unreadable_notebook_is_reported_without_its_text(attacked):
    s = _student(attacked, "k_garbage")
    assert s["marks"] == 0 and s["notebooks"][0]["problem"] == "cannot read the notebook (NotJSONError)"
    assert "SECRET-LINE-42" not in json.dumps(attacked["report"])


@needs_sandbox
def test_odd_names_land_escaped_and_formulas_as_text(attacked):
    rows = {row[0]: row for row in csv.reader(io.StringIO(attacked["csv"]))}
    assert rows["j_bad\\xff"][-2:] == ["8", "8"]  # the byte 0xff as an escape, the marks intact
    assert rows["'=HYPERLINK(1)"][-2:] == ["8", "8"]  # a spreadsheet shows it as text
    assert _student(attacked, "j_bad\\xff")["marks"] == 8


def test_a_cell_a_spreadsheet_would_run_is_prefixed():
    assert [grader._cell(t) for t in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "ann")] == [
        "'=1+1",
        "'+1",
        "'-1",
        "'@SUM(A1)",
        "'\tx",
        "'\rx",
        "ann",
    ]


def test_each_mode_starts_the_sandbox_as_the_right_user(tmp_path):
    root = sandbox.command(["python"], tmp_path, tmp_path, uid=61001, mode="root")
    assert "--unshare-user" not in root and "--reuid=61001" in root and root[-1] == "python"
    assert sandbox.start_as(61001, "root") == {}  # bwrap as root; setpriv switches to 61001 inside
    user = sandbox.command(["python"], tmp_path, tmp_path, uid=61001, mode="user")
    assert "--unshare-user" in user and not any("setpriv" in a for a in user)
    assert sandbox.start_as(61001, "user") == {"user": 61001, "group": 61001, "extra_groups": []}
    assert "--unshare-net" in user and "--die-with-parent" in user and "--unshare-pid" in user
    with pytest.raises(ValueError, match="uid must be a user id"):
        sandbox.command(["python"], tmp_path, tmp_path, uid=None, mode="root")


def test_an_environment_under_tmp_is_bound_over_the_private_tmp(tmp_path, monkeypatch):
    # A fresh clone in /tmp keeps its virtual environment there: the private /tmp must be mounted
    # first and the environment bound on top of it, or the sandbox cannot find its interpreter
    # (a CI run in a clone under /tmp refused every class with "No such file or directory").
    env = tmp_path / "clone" / ".venv"
    (env / "bin").mkdir(parents=True)
    monkeypatch.setattr(sandbox, "_read_only_roots", lambda: ["/usr", str(env)])
    for mode in sandbox.MODES:
        args = sandbox.command(["python"], tmp_path, tmp_path, uid=61001, mode=mode)
        private_tmp = max(i for i, a in enumerate(args) if a == "--tmpfs" and args[i + 1] == "/tmp")
        bound = max(i for i, a in enumerate(args) if a == "--ro-bind" and args[i + 1] == str(env))
        assert private_tmp < bound, mode


@needs_sandbox
def test_a_sandbox_runs_an_interpreter_that_lives_under_tmp(tmp_path, monkeypatch):
    # the real case: a sandbox whose read-only roots include a folder under /tmp starts and reads it
    host = Path("/tmp") / f"roofline-env-{os.getpid()}"
    host.mkdir(exist_ok=True)
    try:
        (host / "marker").write_text("seen")
        os.chmod(host, 0o755)
        os.chmod(host / "marker", 0o644)
        roots = sandbox._read_only_roots() + [str(host)]
        monkeypatch.setattr(sandbox, "_read_only_roots", lambda: roots)
        with _uid() as uid:
            argv, kwargs = _sandboxed(tmp_path, f"print(open({str(host / 'marker')!r}).read())", uid)
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60, **kwargs)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "seen"
    finally:
        (host / "marker").unlink(missing_ok=True)
        host.rmdir()


def test_a_snapshot_refuses_links_and_special_files(tmp_path):
    (tmp_path / "s" / "data").mkdir(parents=True)
    (tmp_path / "s" / EX2).write_text("x")
    (tmp_path / "s" / "data" / "t.csv").write_text("1,2")
    assert grader.snapshot(tmp_path / "s", tmp_path / "seed") == {EX2: 1, "data/t.csv": 3}  # bytes copied
    assert (tmp_path / "seed" / EX2).read_text() == "x" and (tmp_path / "seed" / "data" / "t.csv").read_text() == "1,2"
    assert stat.S_IMODE((tmp_path / "seed").stat().st_mode) == 0o700  # the grader's copy: no sandbox reads it
    (tmp_path / "s" / "link").symlink_to("/etc/hostname")
    with pytest.raises(grader.SubmissionRefused, match="link is a symbolic link"):
        grader.snapshot(tmp_path / "s", tmp_path / "seed2")
    (tmp_path / "s" / "link").unlink()
    os.mkfifo(tmp_path / "s" / "pipe")
    with pytest.raises(grader.SubmissionRefused, match="pipe is not a regular file"):
        grader.snapshot(tmp_path / "s", tmp_path / "seed3")


def _sandboxed(folder: Path, code: str, uid: int | None, *, hidden=()) -> tuple[list[str], dict]:
    """(argv, Popen keywords) of ``python -c code`` in a sandbox whose seed is ``folder/rw``, run as ``uid``."""
    (folder / "rw" / "work").mkdir(parents=True, exist_ok=True)
    (folder / "lib").mkdir(exist_ok=True)
    if uid is not None:
        for p in (folder / "rw", folder / "rw" / "work"):
            os.chown(p, uid, uid)
        os.chmod(folder, 0o755)
    argv = sandbox.command([sys.executable, "-c", code], folder / "rw", folder / "lib", uid=uid, hidden=hidden)
    return argv, {"env": {"PATH": os.defpath}, **sandbox.start_as(uid)}


def _uid():
    """A lease on a sandbox uid, as the grader takes one (a root grader's), or on nothing."""
    return leases.sandbox_uid() if sandbox.mode() in ("root", "user") else contextlib.nullcontext(None)


def _run_json(argv: list[str], kwargs: dict) -> dict:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, **kwargs)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@needs_sandbox
def test_the_sandbox_runs_as_its_own_user_and_sees_none_of_the_grader(tmp_path):
    probe = (
        "import json, os, socket\n"
        "out = {'uid': os.getuid(), 'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit())}\n"
        f"out['key'] = [p for p in {[str(KEY), *(str(KEY / n) for n in KEY_FILES)]!r} if os.path.exists(p)]\n"
        f"out['solutions'] = os.path.exists({str(ROOT / 'solutions')!r})\n"
        "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2); out['net'] = True\n"
        "except OSError:\n    out['net'] = False\n"
        f"try:\n    open('{sandbox.LIB}/x', 'w'); out['lib_writable'] = True\n"
        "except OSError:\n    out['lib_writable'] = False\n"
        f"out['cwd'], out['empty'] = os.getcwd(), os.listdir('.') == []\n"
        f"out['seed'] = open('{sandbox.SEED}/work/handed-in').read()\n"
        "open('scratch-ok', 'w').write('1')\n"
        "print(json.dumps(out))\n"
    )
    with _uid() as uid:
        argv, kwargs = _sandboxed(tmp_path, probe, uid)
        (tmp_path / "rw" / "work" / "handed-in").write_text("the submission")
        seen = _run_json(argv, kwargs)
    if uid is not None:
        assert seen["uid"] == uid  # a real uid of its own, not root under another name
    assert os.getpid() not in seen["pids"] and max(seen["pids"]) < 10  # a PID namespace of its own
    assert not seen["key"] and not seen["solutions"] and not seen["net"] and not seen["lib_writable"]
    assert seen["cwd"] == sandbox.SCRATCH and seen["empty"]  # a scratch space of its own, empty
    assert seen["seed"] == "the submission"  # the submission, read-only, for the worker to copy
    assert not (tmp_path / "rw" / "work" / "scratch-ok").exists()  # what it wrote stayed in the sandbox


# Every mount of the sandbox, by what the kernel sees: read-only except its scratch space and /tmp.
_MOUNTS = """
import json, os, sys
out = {}
for path in PATHS:
    vfs = os.statvfs(path)
    try:
        open(os.path.join(path, "roofline-probe"), "w").close()
        wrote = True
    except OSError:
        wrote = False
    out[path] = {"read_only": bool(vfs.f_flag & os.ST_RDONLY), "bytes": vfs.f_blocks * vfs.f_frsize, "wrote": wrote}
print(json.dumps(out))
"""


@needs_sandbox
def test_every_mount_is_read_only_but_the_notebook_s_scratch_space_and_tmp(tmp_path):
    read_only = ["/", sandbox.LIB, sandbox.SEED, "/grading", "/etc", *sandbox._read_only_roots()]
    with _uid() as uid:
        argv, kwargs = _sandboxed(tmp_path, f"PATHS = {[*read_only, sandbox.SCRATCH, '/tmp']!r}\n" + _MOUNTS, uid)
        seen = _run_json(argv, kwargs)
    for path in read_only:
        assert seen[path]["read_only"] and not seen[path]["wrote"], path  # by the mount, whatever the user
    assert seen[sandbox.SCRATCH] == {"read_only": False, "bytes": sandbox.SCRATCH_BYTES, "wrote": True}
    assert seen["/tmp"] == {"read_only": False, "bytes": sandbox.TMP_BYTES, "wrote": True}


@needs_sandbox
def test_the_key_of_an_installed_package_is_hidden_in_the_sandbox(tmp_path, monkeypatch):
    # A non-editable install: roofline_lib lies in site-packages, inside a read-only root the kernel
    # needs. The grader masks the folder it was imported from; the rest of site-packages stays.
    site = tmp_path / "env" / "site-packages"
    (site / "roofline_lib" / "grading" / "key").mkdir(parents=True)
    (site / "roofline_lib" / "grading" / "key" / "parts.py").write_text("THE_KEY = 200\n")
    (site / "numpy_like").mkdir()
    (site / "numpy_like" / "core.py").write_text("seen\n")
    for folder in [tmp_path, *(p for p in site.rglob("*") if p.is_dir())]:
        os.chmod(folder, 0o755)
    roots = sandbox._read_only_roots() + [str(site)]
    monkeypatch.setattr(sandbox, "_read_only_roots", lambda: roots)
    monkeypatch.setattr(grader, "_PACKAGE_DIR", site / "roofline_lib")  # where the grader was imported from
    probe = (
        "import json, os\n"
        f"key = {str(site / 'roofline_lib' / 'grading' / 'key' / 'parts.py')!r}\n"
        "out = {'key': os.path.exists(key), 'package': os.listdir(os.path.dirname(os.path.dirname(os.path.dirname(key))))}\n"
        f"out['other'] = open({str(site / 'numpy_like' / 'core.py')!r}).read()\n"
        "print(json.dumps(out))\n"
    )
    scratch = tmp_path / "scratch"
    (scratch / "rw" / "work").mkdir(parents=True)
    (scratch / "lib").mkdir()
    with _uid() as uid:
        argv, kwargs = grader._worker_command([sys.executable, "-c", probe], scratch, True, uid)
        seen = _run_json(argv, {**kwargs, "env": {"PATH": os.defpath}})
    assert seen == {"key": False, "package": [], "other": "seen\n"}  # the key gone, its neighbours there


# System calls a notebook never needs, tried from inside a sandbox: (name, number, arguments).
_SYSCALLS = """
import ctypes, json, subprocess, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
out = {}
for name, number, args in [("unshare", 272, (0x10000000,)), ("keyctl", 250, (0, 0)), ("bpf", 321, (0, 0, 0)),
                           ("ptrace", 101, (16, 1)), ("io_uring_setup", 425, (1, 0)), ("clone3", 435, (0, 0))]:
    returned = libc.syscall(number, *args)
    out[name] = "ok" if returned >= 0 else errno_names.get(ctypes.get_errno(), str(ctypes.get_errno()))
thread = threading.Thread(target=lambda: None)
thread.start()
thread.join()
out["subprocess"] = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True).stdout
print(json.dumps(out))
"""


@needs_sandbox
@pytest.mark.skipif(grader.sandbox.syscall_filter.program() is None, reason="no system-call filter for this CPU")
def test_the_system_call_filter_refuses_what_a_notebook_never_needs(tmp_path):
    code = "import errno\nerrno_names = errno.errorcode\n" + _SYSCALLS
    with _uid() as uid, sandbox.filter_pipe() as fd:
        scratch = tmp_path / "s"
        (scratch / "rw" / "work").mkdir(parents=True)
        (scratch / "lib").mkdir()
        argv, kwargs = grader._worker_command([sys.executable, "-c", code], scratch, True, uid, fd)
        seen = _run_json(argv, {**kwargs, "env": {"PATH": os.defpath}})
    refused = ("unshare", "keyctl", "bpf", "ptrace", "io_uring_setup")
    assert {name: seen[name] for name in refused} == dict.fromkeys(refused, "EPERM")
    assert seen["clone3"] == "ENOSYS"  # so that the C library falls back to clone, whose flags are read
    assert seen["subprocess"] == "42\n"  # threads and processes still start


_FILL_AND_HOLD = """
import json, os, sys, time
written, errno = 0, None
try:
    for n in range(40):  # 640 MiB at most, in files under the 64 MiB limit of one file
        with open(f"fill{n}", "wb") as f:
            for _ in range(3):
                f.write(b"x" * 2**24)
                written += 2**24
except OSError as err:
    errno = err.errno
print(json.dumps({"written": written, "errno": errno}), flush=True)
time.sleep(3)  # full, while the neighbour runs
"""

# Writes 32 MiB in its own space, and looks for the filler's files wherever another sandbox's might show.
_NEIGHBOUR = """
import glob, json, os
vfs = os.statvfs(".")
with open("mine", "wb") as f:
    f.write(b"y" * 2**25)  # 32 MiB
seen = [p for pattern in ("/proc/*/root/grading/scratch/fill*", "/proc/*/cwd/fill*", "/grading/**/fill*", "/tmp/**/fill*")
        for p in glob.glob(pattern, recursive=True)]
print(json.dumps({"free": vfs.f_bavail * vfs.f_frsize, "wrote": os.path.getsize("mine"), "seen": seen}))
"""


@needs_sandbox
def test_a_sandbox_that_fills_its_scratch_space_fails_alone(tmp_path):
    with _uid() as uid_a, _uid() as uid_b:
        argv, kwargs = _sandboxed(tmp_path / "a", _FILL_AND_HOLD, uid_a)
        filler = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, **kwargs)
        try:
            full = json.loads(filler.stdout.readline())
            neighbour = _run_json(*_sandboxed(tmp_path / "b", _NEIGHBOUR, uid_b))  # while the filler holds
        finally:
            filler.kill()
            filler.wait(timeout=30)
    assert full["errno"] == 28  # ENOSPC: its own space is full ...
    assert sandbox.SCRATCH_BYTES - 2**24 <= full["written"] <= sandbox.SCRATCH_BYTES  # ... at its size
    assert neighbour["free"] > sandbox.SCRATCH_BYTES - 2**20 and neighbour["wrote"] == 2**25  # ... and only its own
    assert neighbour["seen"] == []  # nor can the neighbour see it
    assert not list((tmp_path / "a").rglob("fill*"))  # none of it on the host's disk


# Under the sandbox's process limit (the worker sets it on itself), starts `sleep`s until one is
# refused, says how many ran, and holds them while the neighbour runs.
_FORK_AND_HOLD = """
import json, os, resource, time
resource.setrlimit(resource.RLIMIT_NPROC, (MAX_PROCS, MAX_PROCS))
started, refused = 0, None
try:
    for _ in range(4 * MAX_PROCS):
        if os.fork() == 0:
            try:
                os.execv("/usr/bin/sleep", ["sleep", "30"])
            finally:
                os._exit(1)
        started += 1
except OSError as err:
    refused = err.errno
print(json.dumps({"started": started, "refused": refused}), flush=True)
time.sleep(30)
"""

# Under the same limit, starts threads and a process: what a kernel does.
_STARTS = """
import json, resource, subprocess, sys, threading
resource.setrlimit(resource.RLIMIT_NPROC, (MAX_PROCS, MAX_PROCS))
threads = [threading.Thread(target=lambda: None) for _ in range(16)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"threads": len(threads), "child": subprocess.run([sys.executable, "-c", "print(6 * 7)"],
                                                                  capture_output=True, text=True).stdout}))
"""


@needs_sandbox
@pytest.mark.skipif(sandbox.mode() == "self", reason="a grader that is not root runs every sandbox as its own user")
def test_a_sandbox_that_uses_every_process_its_user_may_have_fails_alone(tmp_path):
    limit = str(sandbox.limits(0)["processes"])
    with _uid() as uid_a, _uid() as uid_b:
        argv, kwargs = _sandboxed(tmp_path / "a", _FORK_AND_HOLD.replace("MAX_PROCS", limit), uid_a)
        bomb = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, **kwargs)
        try:
            held = json.loads(bomb.stdout.readline())
            neighbour = _run_json(*_sandboxed(tmp_path / "b", _STARTS.replace("MAX_PROCS", limit), uid_b))
        finally:
            bomb.kill()
            bomb.wait(timeout=30)
    assert held["refused"] == 11 and held["started"] < int(limit)  # EAGAIN: stopped at its limit ...
    assert neighbour == {"threads": 16, "child": "42\n"}  # ... which is its own user's, not its neighbour's


def test_a_class_is_refused_without_a_sandbox_unless_unsandboxed_is_given(tmp_path):
    _build(tmp_path / "sub" / "ann" / EX2, ROOT / "solutions" / EX2)
    no_bwrap = {**os.environ, "PATH": str(tmp_path / "empty")}  # bwrap cannot be found
    proc = _grade("--submissions", str(tmp_path / "sub"), env=no_bwrap, timeout=60)
    assert proc.returncode == 2
    assert b"cannot grade a class in a sandbox" in proc.stderr and b"--unsandboxed" in proc.stderr
    out = tmp_path / "g.csv"
    proc = _grade("--submissions", str(tmp_path / "sub"), "--unsandboxed", "--csv", str(out), env=no_bwrap)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("GRADES NOT ISOLATED")
    assert b"GRADES NOT ISOLATED" in proc.stdout


@needs_sandbox
def test_a_stopped_grader_writes_its_reports_and_removes_its_scratch(tmp_path):
    _build(tmp_path / "sub" / "ann" / EX2, ROOT / "solutions" / EX2)
    _build(tmp_path / "sub" / "bob" / EX2, ROOT / "exercises" / EX2, {"answer-ex2-a": "import time\ntime.sleep(60)"})
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    args = ["--submissions", str(tmp_path / "sub"), "--workers", "2", "--json", str(tmp_path / "r.json")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "roofline_lib.cli", "grade", *args, "--csv", str(tmp_path / "g.csv")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(scratch.glob(f"{leases.SCRATCH_PREFIX}*/s001-*")):
        time.sleep(0.2)  # bob's notebook has its scratch folder: his kernel is starting
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stopped"] == "SIGTERM" and [s["student"] for s in report["students"]] == ["ann", "bob"]
    assert "the grader was stopped (SIGTERM)" in report["students"][1]["notebooks"][0]["problem"]
    assert (tmp_path / "g.csv").read_text().count("\n") == 3  # header, ann, bob
    assert list(scratch.iterdir()) == []  # the scratch folders are removed


@needs_sandbox
def test_a_kernel_can_write_nowhere_but_its_scratch_nor_read_another_student_s(attacked):
    assert _marks(attacked, "d_waits")["ex2-a"] == 0  # not one of its writes or reads succeeded


def test_the_breakout_cell_breaks_out_where_nothing_stops_it(tmp_path):
    # the attack works: outside a sandbox, on a library and a seed it may write, it finds its breaches
    # (only on these: run here, the system's paths it tries in a kernel would really be written, and
    # a namespace of its own would take this test process into it)
    for sub in ("lib/roofline_lib", "seed/work"):
        (tmp_path / sub).mkdir(parents=True)
    namespace = {}
    exec(_breakout(str(tmp_path / "lib"), str(tmp_path / "seed")), namespace)
    assert str(tmp_path / "lib" / "roofline_lib" / "observer.py") in namespace["breaches"]
    assert namespace["ridge_p"] == 200  # 1200e12 / 6e12
