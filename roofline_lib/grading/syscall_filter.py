"""The sandbox's system-call filter: a seccomp program for bubblewrap's ``--seccomp FD``.

Like the default profile of container engines, it lets a kernel make every system call a
notebook needs and refuses, with ``EPERM``, those that act on the machine rather than on the
process: loading kernel modules, mounting, rebooting, setting the clock, keyrings, BPF,
performance counters, ``ptrace`` and reading or writing another process's memory, new
namespaces (``unshare``, ``setns`` and ``clone`` with a namespace flag), ``io_uring``
(which would bypass this filter) and the new mount API. ``clone3`` answers ``ENOSYS``, as
in those engines, so the C library falls back to ``clone``, whose flags the filter can read.
A system call of another ABI (32-bit ``int 0x80``, x32) is refused whatever its number.

The program is built here, instruction by instruction (no libseccomp), for x86-64, the only
architecture whose numbers it holds; elsewhere :func:`program` is None and the sandbox runs
without a filter.
"""

from __future__ import annotations

import errno
import platform
import struct

__all__ = ["DENIED", "program"]

#: x86-64 system calls refused with EPERM (numbers from the kernel's unistd_64.h).
DENIED = {
    "ptrace": 101,
    "syslog": 103,
    "uselib": 134,
    "ustat": 136,
    "sysfs": 139,
    "pivot_root": 155,
    "_sysctl": 156,
    "chroot": 161,
    "acct": 163,
    "settimeofday": 164,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "iopl": 172,
    "ioperm": 173,
    "create_module": 174,
    "init_module": 175,
    "delete_module": 176,
    "get_kernel_syms": 177,
    "query_module": 178,
    "quotactl": 179,
    "nfsservctl": 180,
    "lookup_dcookie": 212,
    "clock_settime": 227,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "perf_event_open": 298,
    "fanotify_init": 300,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "clock_adjtime": 305,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "quotactl_fd": 443,
}
_CLONE, _CLONE3 = 56, 435
#: clone() flags that make a namespace: NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET.
_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000
# struct seccomp_data: int nr (offset 0), u32 arch (4), u64 instruction_pointer (8), u64 args[6] (16)
_NR, _ARCH, _ARG0_LOW = 0, 4, 16  # args[0]'s low 32 bits (little-endian)

# classic BPF opcodes
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ, _JGE, _JSET = 0x15, 0x35, 0x45  # BPF_JMP | BPF_{JEQ,JGE,JSET} | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_ERRNO = 0x00050000  # SECCOMP_RET_ERRNO | errno


def _assemble(lines: list[tuple]) -> bytes:
    """``(label,)`` marks a place; ``(code, k, if_true, if_false)`` an instruction jumping to labels
    (None: the next instruction). Returns the program as ``struct sock_filter`` records."""
    places, count = {}, 0
    for line in lines:
        if len(line) == 1:
            places[line[0]] = count
        else:
            count += 1
    out, i = [], 0
    for line in lines:
        if len(line) == 1:
            continue
        code, k, if_true, if_false = line
        jt = places[if_true] - i - 1 if if_true else 0
        jf = places[if_false] - i - 1 if if_false else 0
        if not (0 <= jt < 256 and 0 <= jf < 256):
            raise ValueError(f"a jump of instruction {i} is out of reach ({jt}, {jf})")
        out.append(struct.pack("=HBBI", code, jt, jf, k))
        i += 1
    return b"".join(out)


def program() -> bytes | None:
    """The filter for this machine's architecture, or None where it holds no numbers for it."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    lines: list[tuple] = [
        (_LD_W_ABS, _ARCH, None, None),
        (_JEQ, _AUDIT_ARCH_X86_64, None, "deny"),  # another ABI: refused
        (_LD_W_ABS, _NR, None, None),
        (_JGE, _X32_SYSCALL_BIT, "deny", None),
        (_JEQ, _CLONE, "clone", None),
        (_JEQ, _CLONE3, "no such call", None),
    ]
    lines += [(_JEQ, number, "deny", None) for number in sorted(DENIED.values())]
    lines += [
        (_RET, _ALLOW, None, None),
        ("clone",),
        (_LD_W_ABS, _ARG0_LOW, None, None),
        (_JSET, _NAMESPACE_FLAGS, "deny", None),
        (_RET, _ALLOW, None, None),
        ("no such call",),
        (_RET, _ERRNO | errno.ENOSYS, None, None),
        ("deny",),
        (_RET, _ERRNO | errno.EPERM, None, None),
    ]
    return _assemble(lines)
