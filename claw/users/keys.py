"""Who is speaking: a keys file maps each person's API key to their user id, so one proxy serves many people.

The file (YAML) holds no key, only each key's SHA-256, under the user it belongs to; a user may hold several keys:

    alice:
      - sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    bob:
      - sha256:60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752

    python -m claw.users add-key keys.yaml alice      # prints a new key for alice; stores only its hash

The proxy (`source.keys_file`) reads it again whenever it changes on disk, so a person added (or a key removed)
needs no restart. A request's user is the key's user; with no keys file, the request's OpenAI `user` field; with
neither, `DEFAULT_USER`. A user id is a name the run directory can hold (`USER_ID`), since a user's adapter and
exports live under it.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from pathlib import Path

import yaml

DEFAULT_USER = "default"
USER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
PREFIX = "sha256:"


class KeysError(ValueError):
    """A keys file that cannot be read as user id → key hashes."""


def key_hash(key: str) -> str:
    return PREFIX + hashlib.sha256(key.encode()).hexdigest()


def check_user_id(user: str) -> str:
    if not isinstance(user, str) or not USER_ID.match(user):
        raise KeysError(
            f"user id {user!r} must be 1-64 letters, digits, '_', '.', '@' or '-', starting with a letter or digit"
        )
    return user


def parse_keys(data: object, where: str = "keys file") -> dict[str, str]:
    """{key hash: user id} from the file's YAML; a hash under two users is an error (it would say two people)."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise KeysError(f"{where}: expected a mapping of user id to a list of 'sha256:<hex>' key hashes")
    by_hash: dict[str, str] = {}
    for user, hashes in data.items():
        check_user_id(str(user))
        for h in [hashes] if isinstance(hashes, str) else hashes or []:
            if not (isinstance(h, str) and h.startswith(PREFIX) and re.fullmatch(r"[0-9a-f]{64}", h[len(PREFIX) :])):
                raise KeysError(f"{where}: user {user!r} has {h!r}, not a 'sha256:<64 hex digits>' key hash")
            if by_hash.setdefault(h, str(user)) != str(user):
                raise KeysError(f"{where}: one key hash is listed under both {by_hash[h]!r} and {user!r}")
    return by_hash


class KeysFile:
    """The keys file as the proxy reads it: `user_for(key)` is the key's user or None, from the file as it is now."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._stamp: tuple[int, int] | None = None
        self._by_hash: dict[str, str] = {}
        self._reload()  # a missing or broken file fails at start, not at the first request

    def _reload(self) -> None:
        st = self.path.stat()
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            self._by_hash = parse_keys(yaml.safe_load(self.path.read_text()), str(self.path))
            self._stamp = stamp

    def user_for(self, key: str) -> str | None:
        try:
            self._reload()
        except (OSError, KeysError, yaml.YAMLError):
            pass  # a file caught mid-write or removed: the last good reading stands
        return self._by_hash.get(key_hash(key))

    def __len__(self) -> int:
        return len(self._by_hash)


def add_key(path: str | os.PathLike, user: str) -> str:
    """A new key for `user`, its hash appended to the keys file (created when missing); the key is returned once and
    stored nowhere."""
    check_user_id(user)
    path = Path(path)
    data = yaml.safe_load(path.read_text()) if path.exists() else None
    parse_keys(data, str(path))  # refuse to add to a file that does not read
    data = dict(data or {})
    key = "claw-" + secrets.token_urlsafe(32)
    held = data.get(user) or []
    data[user] = [*([held] if isinstance(held, str) else held), key_hash(key)]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(data, sort_keys=True))
    os.chmod(tmp, 0o600)
    tmp.replace(path)
    return key
