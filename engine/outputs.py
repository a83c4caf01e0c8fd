"""Where the command line writes (`trace --out`, `bench --out`): checked before any work, written whole.

The rule, the same for every file the tools write: the folder must exist (bench makes its own folder,
in one that exists) and take a new file; the file is written to a temporary file beside it and renamed
over its name, so a reader never sees half a file and nothing is ever written *through* an existing
name (a link, a device, /proc, a file of someone else's). A name that exists is replaced only when it
is a regular file this tool wrote, recognised by its first bytes; anything else is refused with a
one-line message, and the user removes it or chooses another name. A tool run as root can reach
every file on the machine: --out /etc/passwd must never be the way to lose one.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from engine.errors import EngineError

HEAD = 4096   # bytes read of an existing file to tell whether this tool wrote it


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _head(path: Path) -> bytes | None:
    """The first bytes of a regular file (not through a link, and without blocking on a FIFO), or
    None if path is anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, HEAD)
    except OSError:
        return None
    finally:
        os.close(fd)


def check_replaceable(path: Path, ours, what: str, flag: str = "--out") -> None:
    """Refuses path unless it does not exist or is a regular file whose first bytes ours(head) says
    this tool wrote (what: the kind of file, for the message)."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise EngineError(f"{flag} {path}: cannot be checked ({_why(exc)})") from None
    if stat.S_ISDIR(st.st_mode):
        raise EngineError(f"{flag} {path}: that is a directory")
    head = _head(path) if stat.S_ISREG(st.st_mode) else None
    if head is None or not ours(head):
        raise EngineError(f"{flag} {path}: exists and is not {what} written by this tool; it is not replaced "
                          "(remove it or choose another name)")


def check_folder(folder: Path, flag: str, shown: str) -> None:
    """A folder that exists and takes a new file (the real test: os.access says yes to root on a
    read-only mount); shown is the --out as given, for the message."""
    if not folder.is_dir():
        there = folder.exists() or folder.is_symlink()   # a file (or a dangling link) where the folder would be
        raise EngineError(f"{flag} {shown}: {folder} is not a directory" if there else
                          f"{flag} {shown}: the directory {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".out-check-", suffix=".tmp")
    except OSError as exc:
        raise EngineError(f"{flag} {shown}: cannot write in {folder} ({_why(exc)})") from None
    os.close(fd)
    os.unlink(tmp)


def make_folder(out: Path, flag: str = "--out", make: bool = True) -> None:
    """bench's folder: made if missing (in a folder that exists), else a directory; then checked.
    make False: only checked, before the work (a command that then fails leaves no folder behind)."""
    try:
        st = out.stat()
    except FileNotFoundError:
        check_folder(out.parent, flag, str(out))
        if not make:
            return
        try:
            out.mkdir()
        except FileExistsError:   # made meanwhile: checked below like any other
            pass
        except OSError as exc:
            raise EngineError(f"{flag} {out}: cannot be made ({_why(exc)})") from None
    except OSError as exc:
        raise EngineError(f"{flag} {out}: cannot be checked ({_why(exc)})") from None
    else:
        if not stat.S_ISDIR(st.st_mode):
            raise EngineError(f"{flag} {out}: exists and is not a directory (bench writes a folder of files)")
    check_folder(out, flag, str(out))


def temporary(path: Path) -> Path:
    """An empty temporary file beside path, to be written and then renamed (replace) over it."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    return Path(tmp)


def replace(tmp: Path, path: Path) -> None:
    """Renames the written tmp over path, with an ordinary file's permissions (mkstemp made it 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o666 & ~umask)
    os.replace(tmp, path)


def write(path: Path, data: bytes | str) -> None:
    """Writes a whole file through a temporary one beside it; a one-line EngineError if it cannot."""
    try:
        tmp = temporary(path)
    except OSError as exc:
        raise EngineError(f"could not write {path} ({_why(exc)})") from None
    try:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        replace(tmp, path)
    except OSError as exc:
        raise EngineError(f"could not write {path} ({_why(exc)})") from None
    finally:
        tmp.unlink(missing_ok=True)
