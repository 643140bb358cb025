"""Key files: PEM PKCS#8 private keys (mode 0600) and PEM SubjectPublicKeyInfo public keys (0644).

Files are written to a temporary file in the target directory, created with its final mode, then
hard-linked into place: the link fails if the target exists, so an existing key is never
overwritten, and no reader ever sees a partly written or group-readable private key.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from keys.ed25519 import SigningKey, VerifyingKey
from keys.errors import KeyFileError, KeyringError

__all__ = [
    "generate_key_file",
    "load_private_key",
    "load_public_key",
    "write_private_key",
    "write_public_key",
]

PRIVATE_MODE = 0o600
PUBLIC_MODE = 0o644
# A PEM Ed25519 key is about 120 bytes; anything far larger is not one of ours.
_MAX_KEY_FILE = 64 * 1024
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS})


def _create(path: Path, data: bytes, mode: int) -> None:
    """Create the new file ``path`` holding ``data`` with exactly ``mode``.

    The file is created 0600 (the umask can only narrow that), so it is never readable by
    others while the data is written; ``fchmod`` then sets the final mode.
    """
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, PRIVATE_MODE)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        # A half-written key file would block the next attempt ("already exists").
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Atomically create ``path`` holding ``data`` with ``mode``; never replace an existing file."""
    exists = f"key file {path} already exists; refusing to overwrite it"
    if path.exists() or path.is_symlink():
        raise KeyFileError(exists, path=str(path))
    tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        try:
            _create(tmp, data, mode)
            # Unlike os.replace, os.link fails when the target exists: no check-then-act race.
            os.link(tmp, path)
        except FileExistsError:
            raise KeyFileError(exists, path=str(path)) from None
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise KeyFileError(
                    f"cannot create key file {path}: {exc.strerror}", path=str(path)
                ) from exc
            # This file system has no hard links: create the target itself, still exclusively
            # and with its final mode from the first byte, at the cost of atomicity on a crash.
            try:
                _create(path, data, mode)
            except FileExistsError:
                raise KeyFileError(exists, path=str(path)) from None
            except OSError as exc2:
                raise KeyFileError(
                    f"cannot create key file {path}: {exc2.strerror}", path=str(path)
                ) from exc2
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    # Make the new directory entry durable; not every platform can open a directory.
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(dfd)
    finally:
        os.close(dfd)


def _read(path: Path, *, private: bool) -> bytes:
    """Read a key file, checking on the open descriptor that it is a small regular file and,
    for a private key, that group and others have no access."""
    kind = "private" if private else "public"
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise KeyFileError(f"{kind} key file {path} does not exist", path=str(path)) from None
    except OSError as exc:
        raise KeyFileError(
            f"cannot open {kind} key file {path}: {exc.strerror}", path=str(path)
        ) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise KeyFileError(f"{kind} key file {path} is not a regular file", path=str(path))
        mode = stat.S_IMODE(st.st_mode)
        if private and mode & 0o077:
            access = "readable" if mode & 0o044 else "accessible"
            raise KeyFileError(
                f"private key file {path} is {access} by group/others (mode {mode:04o}); "
                f"run chmod 600 {path}",
                path=str(path),
                mode=f"{mode:04o}",
            )
        if st.st_size > _MAX_KEY_FILE:
            raise KeyFileError(f"{kind} key file {path} is too large to be a key", path=str(path))
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(_MAX_KEY_FILE + 1)
    finally:
        os.close(fd)


def write_private_key(path: Path, key: SigningKey) -> None:
    """Write ``key`` to a new file ``path`` as unencrypted PEM PKCS#8, mode 0600.

    Raises:
        KeyFileError: ``path`` already exists, or the file cannot be created.
    """
    _write_new(Path(path), key.to_pem(), PRIVATE_MODE)


def load_private_key(path: Path) -> SigningKey:
    """Return the private key stored in ``path``.

    Raises:
        KeyFileError: the file is missing, is readable or writable by group/others
            (``mode & 0o077``), or is not an unencrypted PEM PKCS#8 Ed25519 private key.
    """
    path = Path(path)
    data = _read(path, private=True)
    try:
        return SigningKey.from_pem(data)
    except KeyringError as exc:
        raise KeyFileError(f"private key file {path}: {exc.detail}", path=str(path)) from None


def write_public_key(path: Path, key: VerifyingKey) -> None:
    """Write ``key`` to a new file ``path`` as PEM SubjectPublicKeyInfo, mode 0644.

    Raises:
        KeyFileError: ``path`` already exists, or the file cannot be created.
    """
    _write_new(Path(path), key.to_pem(), PUBLIC_MODE)


def load_public_key(path: Path) -> VerifyingKey:
    """Return the public key stored in ``path``.

    Raises:
        KeyFileError: the file is missing or is not a PEM SubjectPublicKeyInfo Ed25519 key.
    """
    path = Path(path)
    data = _read(path, private=False)
    try:
        return VerifyingKey.from_pem(data)
    except KeyringError as exc:
        raise KeyFileError(f"public key file {path}: {exc.detail}", path=str(path)) from None


def generate_key_file(path: Path) -> SigningKey:
    """Generate a new key, write it to the new file ``path`` (mode 0600) and return it.

    Raises:
        KeyFileError: ``path`` already exists, or the file cannot be created.
    """
    key = SigningKey.generate()
    write_private_key(path, key)
    return key
