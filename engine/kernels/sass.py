"""What nvcc actually emitted: memory instructions in the SASS of the timing (plain) build.

The trace counts source-level accesses. nvcc may merge several scalar shared loads into one
LDS.64 / LDS.128 (an unrolled loop reading consecutive words), and Nsight Compute counts hardware
instructions, so its instruction and wavefront counts then differ from the trace's. This module
says so instead of pretending: it counts memory opcodes per source line (-lineinfo) with nvdisasm.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import struct
import subprocess
import sysconfig
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from engine.errors import EngineError
from engine.kernels import build, cache, sources

_OP_RE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)")
# An instruction under the always-false predicate: ptxas emits three `@!PT LDS RZ, [RZ]` before each
# straight run of LDGSTS on sm_90 (before every one where each sits in its own branch, once before a
# run of unrolled copies). It reads nothing, but the warp issues it, and Nsight Compute counts it among
# the executed shared loads.
_NEVER_RE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+@!PT\s+([A-Z][A-Z0-9_.]+)")
_LINE_RE = re.compile(r'line (\d+)')
# Every (file, line) of a location and the calls it was inlined into, innermost first (nvdisasm -gi).
_FRAME_RE = re.compile(r'"([^"]+)", line (\d+)')
MEMORY_PREFIXES = ("LDG", "STG", "LDS", "STS", "LD.", "ST.")
LISTING_VERSION = 5   # of what a saved listing holds: one written by an earlier version is listed again


def fingerprint(cubin: Path) -> str:
    """A digest of a cubin's machine code: the bytes of its .text sections, read from the ELF file
    (the file as a whole also holds debug sections with the paths it was built from). The same for
    the same compiled kernel on any machine, whichever nvdisasm lists it. Nsight Compute's reference
    keeps the fingerprint of the build it measured, so a reference of another build (an edited source,
    another nvcc) is told apart from one of this build, whatever its counters say."""
    data = cubin.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise EngineError(f"{cubin.name} is not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = sections[shstrndx][4]

    def name(section):
        start = names_at + section[0]
        return data[start:data.index(b"\0", start)].decode()
    digest = hashlib.sha256()
    for section in sorted(sections, key=name):
        if name(section).startswith(".text."):
            digest.update(name(section).encode() + b"\0" + data[section[4]:section[4] + section[5]])
    return digest.hexdigest()[:16]


def nvdisasm() -> str | None:
    found = shutil.which("nvdisasm") or shutil.which("nvdisasm", path="/usr/local/cuda/bin")
    if found:
        return found
    # The nvidia-cuda-nvdisasm wheel (requirements.txt) puts it under site-packages/nvidia/*/bin.
    for hit in Path(sysconfig.get_paths()["purelib"]).glob("nvidia/*/bin/nvdisasm"):
        return str(hit)
    return None


def unavailable(note: str) -> dict:
    return {"available": False, "by_line": {}, "note": note}


def _listing_digest(info: dict) -> str:
    """The sha256 a saved listing carries of the rest of it, as read back from JSON (keys as strings,
    in order): a listing changed on disk, even one count of one line, is listed again."""
    return hashlib.sha256(json.dumps(info, sort_keys=True).encode()).hexdigest()


def _saved_listing(saved, cubin: Path) -> dict | None:
    """A listing kept by an earlier run, if it is one: a successful listing written by this code, of
    this cubin (its fingerprint), whole (its digest), in a regular file of ours that nobody else can
    write (cache.read_own). Anything else is listed again, never shown (an empty, damaged or doctored
    listing would read as "SASS matches the source", or put its counts on other lines)."""
    try:
        info = json.loads(cache.read_own(saved))
        if not isinstance(info, dict) or info.pop("digest", None) != _listing_digest(info):
            return None
        if not (info.get("available") is True and isinstance(info.get("note"), str)
                and isinstance(info.get("by_line"), dict)):
            return None
        by_line = {int(k): v for k, v in info["by_line"].items()}
        if not by_line or not all(isinstance(v, dict) and all(isinstance(c, int) for c in v.values())
                                  for v in by_line.values()):
            return None
        never = info.get("never_per_copy")
        if not (isinstance(never, dict) and all(isinstance(c, (int, float)) for c in never.values())):
            return None    # written before the listing counted them: listed again
        per_line = info.get("never_per_copy_line")
        if info.get("version") != LISTING_VERSION or not isinstance(per_line, dict):
            return None    # written by an earlier reading of listings (before copies were placed by line)
        if not isinstance(info.get("fingerprint"), str) or info["fingerprint"] != fingerprint(cubin):
            return None
        per_line = {int(k): v for k, v in per_line.items()}
        if not all(isinstance(v, dict) and all(isinstance(c, (int, float)) for c in v.values()) for v in per_line.values()):
            return None
        return {**info, "by_line": by_line, "never_per_copy_line": per_line}
    except (ValueError, OSError, AttributeError, TypeError, RecursionError, EngineError):
        return None


def memory_instructions(file: str, params: Mapping[str, int]) -> dict:
    """{'available': bool, 'by_line': {line: {opcode: count}}, 'note': str} for the plain build.
    A tool that is missing or fails gives available=False and a note saying why: an empty listing
    must never read as "SASS matches the source"."""
    tool = nvdisasm()
    if not tool or not build.nvcc():
        return unavailable("SASS not inspected: nvcc or nvdisasm not found")
    try:
        cubin = build.build_cubin(file, params, traced=False)
    except EngineError as exc:
        return unavailable(f"SASS listing unavailable: {exc}")
    # The answer depends only on the cubin, whose name is a hash of its inputs: kept next to it, so
    # nvdisasm runs once per build, not once per server (about half a second on a small machine).
    saved = cubin.with_suffix(".sass.json")
    info = _saved_listing(saved, cubin)
    if info is not None:
        return info
    try:
        done = subprocess.run([tool, "--print-line-info-inline", str(cubin)], capture_output=True, text=True,
                              timeout=60)
    except subprocess.TimeoutExpired:
        return unavailable(f"SASS listing unavailable: nvdisasm took longer than 60 s on {cubin.name}")
    except OSError as exc:
        return unavailable(f"SASS listing unavailable: nvdisasm could not be started ({exc.strerror or exc})")
    if done.returncode:   # a failed listing is reported, never kept
        lines = (done.stderr or done.stdout).strip().splitlines()
        return unavailable(f"SASS listing unavailable: nvdisasm failed on {cubin.name}: "
                           f"{lines[0].strip() if lines else f'exit status {done.returncode}'}")
    src = sources.load(file)
    info = _memory_instructions(done.stdout, src.path, frozenset(s.line for s in src.sites if s.width > 1))
    info["fingerprint"] = fingerprint(cubin)
    try:
        plain = json.loads(json.dumps(info))   # as it will read back: the digest is of that
        cache.write_atomic(saved, json.dumps({**plain, "digest": _listing_digest(plain)}).encode())
    except OSError:
        pass      # not kept: listed again next time
    return info


def earlier_listings(launches, params: Mapping[str, int]) -> dict[str, dict]:
    """memory_instructions of every launch before the last, by kernel name: a kernel of several
    launches (split_k's product before its sum) may copy with cp.async in an earlier one too."""
    return {launch.kernel: memory_instructions(launch.file, params) for launch in list(launches)[:-1]}


def _memory_instructions(text: str, source: Path | None = None, written_wide: frozenset = frozenset()) -> dict:
    """source: the kernel's own file; instructions nvdisasm places in other files (CUDA's headers,
    e.g. cp.async's) are left out rather than mixed into its line numbers. written_wide: lines whose
    accesses the source itself writes 128 bits wide, which nvcc did not merge."""
    by_line: dict[int, Counter] = {}
    never, copies = Counter(), 0
    # The never-executing instructions before each run of copies, placed on the source line of the
    # run's first LDGSTS (the kernel's own line of it: cp.async itself is inlined from a header).
    pending, never_at, copies_at, placed = Counter(), {}, Counter(), True
    line, copy_line, framed = 0, None, False
    for raw in text.splitlines():
        if "LDGSTS" in raw and _OP_RE.search(raw):
            copies += 1
            if copy_line is None:
                placed = False
            else:
                copies_at[copy_line] += 1
                for op, n in pending.items():
                    never_at.setdefault(copy_line, Counter())[op] += n
            pending = Counter()
        off = _NEVER_RE.search(raw)
        if off:
            never[off.group(1)] += 1
            pending[off.group(1)] += 1
            continue        # never part of a source line's accesses
        m = _LINE_RE.search(raw) if "//## File" in raw else None
        if m:
            # A location is a group of these lines, innermost first, one per call it was inlined into:
            # the first gives the instruction's own line (kept only in the kernel's file); the first
            # in the kernel's file gives a copy's line.
            frames = _FRAME_RE.findall(raw)
            ours = bool(frames) and (source is None or Path(frames[0][0]).name == source.name)
            if not framed:
                line = int(m.group(1)) if ours or not frames else None
                copy_line = None
            if copy_line is None and ours:
                copy_line = int(frames[0][1])
            framed = True
            continue
        framed = False
        op = _OP_RE.search(raw)
        if line is not None and op and op.group(1).startswith(MEMORY_PREFIXES):
            by_line.setdefault(line, Counter())[op.group(1)] += 1
    wide = sorted({op for ln, ops in by_line.items() if ln not in written_wide for op in ops
                   if re.search(r"\.(64|128)\b", op)})
    note = (f"SASS matches the source: one {'' if written_wide else '32-bit '}instruction per access" if not wide else
            f"nvcc merged accesses into {', '.join(wide)}: Nsight Compute counts these wider hardware "
            "instructions, so its shared instruction and wavefront totals differ from the trace's "
            "source-level counts (the bank pattern per access is the same)")
    # Counted in every file (cp.async's header holds them): how many never-executing instructions of
    # each kind ptxas put beside each copy. Only copies bring them here; elsewhere it is not modelled.
    per_copy = {op: n / copies for op, n in never.items()} if copies else {}
    # By the source line of the copy: ptxas places them per run, and a kernel whose versions run its
    # copies in runs of different lengths has one ratio per line, not one for the whole kernel. Left
    # empty where a copy could not be placed on a line of the kernel.
    per_line = {ln: {op: n / copies_at[ln] for op, n in never_at.get(ln, Counter()).items()}
                for ln in sorted(copies_at)} if placed else {}
    return {"available": True, "by_line": {k: dict(v) for k, v in sorted(by_line.items())}, "note": note,
            "never_per_copy": per_copy, "never_per_copy_line": per_line, "version": LISTING_VERSION}
