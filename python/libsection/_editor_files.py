"""Files in a folder editor-setup does not trust (the user's op folder): read and written through
descriptors, never through a link, regular files only, atomically, and never over a file that
changed since it was read. ``_editor`` plans what to write; this module writes it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "MAX_READ_BYTES",
    "SetupError",
    "Target",
    "beside",
    "kind_of",
    "link",
    "read_regular",
    "subfolder",
    "write_file",
]


#: The largest ``op.py`` or ``.clangd`` read; anything bigger is not a file this tool reads.
MAX_READ_BYTES = 16 << 20


def read_regular(dir_fd: int, name: str, shown: str) -> tuple[bytes, os.stat_result] | None:
    """The bytes of regular file ``name`` in the folder ``dir_fd`` and its status, or None when
    there is none. A link is not followed, and a FIFO or device is not opened for reading (it
    could block or never end): both raise ``SetupError`` saying what to do."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise SetupError(
                f"{shown} is a symbolic link: editor-setup does not write through links "
                "(the file it points to may be outside the folder); remove the link, or replace "
                "it by a copy of the file, and run again"
            ) from None
        raise SetupError(f"cannot read {shown}: {e.strerror}") from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise SetupError(
                f"{shown} is {kind_of(status.st_mode)}, not a regular file: editor-setup "
                "reads and writes regular files only; remove it and run again"
            )
        if status.st_size > MAX_READ_BYTES:
            raise SetupError(f"{shown} is over {MAX_READ_BYTES} bytes: not read")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 16):
            size += len(chunk)
            if size > MAX_READ_BYTES:
                raise SetupError(f"{shown} is over {MAX_READ_BYTES} bytes: not read")
            chunks.append(chunk)
        return b"".join(chunks), status
    finally:
        os.close(fd)


def kind_of(mode: int) -> str:
    """What an entry of status ``mode`` is, for a message (not followed: a link is a link)."""
    for test, kind in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


class SetupError(Exception):
    """A file editor-setup will not touch, and why; nothing was written."""


@dataclass
class Target:
    """One file to write: its folder (a descriptor), its name there, its new bytes, and the
    status of the file it replaces (None: there is none)."""

    folder_fd: int | None
    name: str
    data: bytes
    replaces: os.stat_result | None
    shown: str
    message: str


def write_file(target: Target) -> None:
    """Writes ``target`` atomically: a new file beside it, renamed over it only if the file it
    replaces is still the one read (else ``SetupError``: it changed meanwhile). Nothing is
    written through a link, and a file that appeared meanwhile is not replaced."""
    folder = target.folder_fd
    assert folder is not None, "the folder is opened before writing"
    mode = stat.S_IMODE(target.replaces.st_mode) if target.replaces is not None else 0o644
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with beside(folder, target.name, lambda t: os.open(t, flags, mode, dir_fd=folder)) as (
        temporary,
        fd,
    ):
        try:
            view = memoryview(target.data)
            while view:
                view = view[os.write(fd, view) :]
            if target.replaces is not None:
                os.fchmod(fd, mode)  # the user's mode, not the umask's
        finally:
            os.close(fd)
        if target.replaces is None:
            try:  # a link fails if the name appeared meanwhile: nothing is replaced
                os.link(
                    temporary,
                    target.name,
                    src_dir_fd=folder,
                    dst_dir_fd=folder,
                    follow_symlinks=False,
                )
            except FileExistsError:
                raise SetupError(
                    f"{target.shown} appeared while editor-setup ran: not replaced; run again"
                ) from None
            return
        now = os.stat(target.name, dir_fd=folder, follow_symlinks=False)
        then = target.replaces
        if (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns, now.st_ctime_ns) != (
            then.st_dev,
            then.st_ino,
            then.st_size,
            then.st_mtime_ns,
            then.st_ctime_ns,
        ):
            raise SetupError(
                f"{target.shown} changed while editor-setup ran: not replaced; run again"
            )
        os.rename(temporary, target.name, src_dir_fd=folder, dst_dir_fd=folder)


T = TypeVar("T")


@contextlib.contextmanager
def beside(folder_fd: int, name: str, make: Callable[[str], T]) -> Iterator[tuple[str, T]]:
    """A new entry under a temporary name beside ``name`` (``make`` creates it exclusively, so
    a failure there leaves nothing of ours), for the caller to rename or link into place; the
    temporary name is gone afterwards, whatever failed."""
    # At most 255 bytes, whatever the name's length.
    temporary = f".{name[:100]}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    made = make(temporary)
    try:
        yield temporary, made
    finally:
        try:
            os.unlink(temporary, dir_fd=folder_fd)
        except FileNotFoundError:
            pass


def subfolder(dir_fd: int, name: str, shown: str, create: bool) -> int | None:
    """A descriptor of the real folder ``name`` in ``dir_fd`` (made if absent and ``create``;
    else None when absent); a link or a file there raises ``SetupError``."""
    if create:
        try:
            os.mkdir(name, 0o755, dir_fd=dir_fd)
        except FileExistsError:
            pass
    try:
        return os.open(
            name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except FileNotFoundError:
        if create:
            raise
        return None
    except OSError as e:
        if e.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise SetupError(f"cannot open {shown}: {e.strerror}") from None
        try:
            what = kind_of(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except OSError:
            what = "not a folder"
        raise SetupError(
            f"{shown} is {what}: editor-setup writes its headers only into a real folder of "
            "its own there; remove it and run again"
        ) from None


def link(folder_fd: int, name: str, target: str) -> None:
    """Points the link ``name`` in ``folder_fd`` at ``target``, replacing a link there at once."""
    with beside(folder_fd, name, lambda t: os.symlink(target, t, dir_fd=folder_fd)) as made:
        os.rename(made[0], name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
