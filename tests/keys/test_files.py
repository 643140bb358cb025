"""Key files: 0600 private keys that refuse group/other access, no overwrites, clear errors."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from keys import (
    KeyFileError,
    SigningKey,
    generate_key_file,
    load_private_key,
    load_public_key,
    write_private_key,
    write_public_key,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """Run with umask 000, so modes come from our code and not from the environment."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("open_umask")
def test_private_key_is_written_0600_and_round_trips(tmp_path: Path) -> None:
    key = SigningKey.generate()
    path = tmp_path / "index.key"
    write_private_key(path, key)
    assert _mode(path) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----\n")
    loaded = load_private_key(path)
    assert loaded.seed == key.seed
    assert loaded.public == key.public
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.key"]  # no temp files left


@pytest.mark.usefixtures("open_umask")
def test_public_key_is_written_0644_and_round_trips(tmp_path: Path) -> None:
    key = SigningKey.generate()
    path = tmp_path / "index.pub"
    write_public_key(path, key.public)
    assert _mode(path) == 0o644
    assert path.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----\n")
    assert load_public_key(path) == key.public


def test_restrictive_umask_still_gives_exact_modes(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        write_public_key(tmp_path / "k.pub", SigningKey.generate().public)
        generate_key_file(tmp_path / "k.key")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "k.pub") == 0o644
    assert _mode(tmp_path / "k.key") == 0o600


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o602, 0o610, 0o601, 0o666])
def test_private_key_accessible_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "index.key"
    generate_key_file(path)
    path.chmod(mode)
    with pytest.raises(KeyFileError) as info:
        load_private_key(path)
    message = str(info.value)
    assert str(path) in message
    assert f"(mode {mode:04o})" in message
    assert f"chmod 600 {path}" in message
    assert info.value.details == {"path": str(path), "mode": f"{mode:04o}"}


def test_refused_0644_message_says_readable_by_others(tmp_path: Path) -> None:
    path = tmp_path / "index.key"
    generate_key_file(path)
    path.chmod(0o644)
    with pytest.raises(KeyFileError, match="is readable by group/others"):
        load_private_key(path)


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o700])
def test_owner_only_modes_are_accepted(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "index.key"
    key = generate_key_file(path)
    path.chmod(mode)
    assert load_private_key(path).public == key.public


def test_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "index.key"
    generate_key_file(path)
    before = path.read_bytes()
    with pytest.raises(KeyFileError, match="already exists"):
        write_private_key(path, SigningKey.generate())
    with pytest.raises(KeyFileError, match="already exists"):
        generate_key_file(path)
    pub = tmp_path / "index.pub"
    write_public_key(pub, SigningKey.generate().public)
    with pytest.raises(KeyFileError, match="already exists"):
        write_public_key(pub, SigningKey.generate().public)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.key", "index.pub"]


def test_refuses_to_write_through_a_dangling_symlink(tmp_path: Path) -> None:
    link = tmp_path / "index.key"
    link.symlink_to(tmp_path / "elsewhere.key")
    with pytest.raises(KeyFileError):
        generate_key_file(link)
    assert not (tmp_path / "elsewhere.key").exists()


def test_missing_files(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match="does not exist"):
        load_private_key(tmp_path / "nope.key")
    with pytest.raises(KeyFileError, match="does not exist"):
        load_public_key(tmp_path / "nope.pub")
    with pytest.raises(KeyFileError):
        write_private_key(tmp_path / "no-such-dir" / "k.key", SigningKey.generate())


def test_a_directory_is_not_a_key_file(tmp_path: Path) -> None:
    (tmp_path / "dir.key").mkdir(mode=0o700)
    with pytest.raises(KeyFileError, match="not a regular file"):
        load_private_key(tmp_path / "dir.key")


def _write_0600(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


def _other_private_pems() -> list[bytes]:
    ec_key = ec.generate_private_key(ec.SECP256R1())
    ed = SigningKey.generate()
    return [
        b"",
        b"garbage\n",
        b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        ed.public.to_pem(),  # a public key where a private one belongs
        ec_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        serialization.load_pem_private_key(ed.to_pem(), None).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"password"),
        ),
        serialization.load_pem_private_key(ed.to_pem(), None).private_bytes(
            serialization.Encoding.DER,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    ]


@pytest.mark.parametrize("index", range(7))
def test_corrupt_or_foreign_private_key_files(tmp_path: Path, index: int) -> None:
    path = _write_0600(tmp_path / "bad.key", _other_private_pems()[index])
    with pytest.raises(KeyFileError) as info:
        load_private_key(path)
    assert str(path) in str(info.value)
    assert info.value.details["path"] == str(path)


def test_corrupt_or_foreign_public_key_files(tmp_path: Path) -> None:
    ec_public = ec.generate_private_key(ec.SECP256R1()).public_key()
    for data in [
        b"",
        b"garbage",
        SigningKey.generate().to_pem(),
        ec_public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
    ]:
        path = tmp_path / "bad.pub"
        path.write_bytes(data)
        with pytest.raises(KeyFileError) as info:
            load_public_key(path)
        assert str(path) in str(info.value)


def test_oversized_key_file(tmp_path: Path) -> None:
    path = _write_0600(tmp_path / "big.key", b"x" * (1 << 17))
    with pytest.raises(KeyFileError, match="too large"):
        load_private_key(path)


def test_file_systems_without_hard_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_link(src: object, dst: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_link)
    path = tmp_path / "index.key"
    key = generate_key_file(path)
    assert _mode(path) == 0o600
    assert load_private_key(path).public == key.public
    with pytest.raises(KeyFileError, match="already exists"):
        generate_key_file(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.key"]


def test_a_failed_write_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", disk_full)
    with pytest.raises(KeyFileError, match="No space left on device"):
        generate_key_file(tmp_path / "index.key")
    assert list(tmp_path.iterdir()) == []
