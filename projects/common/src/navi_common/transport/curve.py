"""Opt-in ZeroMQ CURVE security: key files, the ZAP allowlist, and socket setup by role.

One folder (default ``artifacts/keys/``, written by ``navi-keys generate``) holds::

    server.key            server public key   (every client needs it)
    server.key_secret     server secret key   (0600; only the machine that binds)
    client.key            client public key
    client.key_secret     client secret key   (0600; only the machines that connect)
    authorized_clients/   public keys of every client a server accepts (the allowlist)

The files use pyzmq's certificate format (:func:`zmq.auth.load_certificate` reads them). A socket
that binds is a CURVE server, one that connects is a CURVE client. A server's connections are
checked by a ZAP authenticator (pyzmq's ``ThreadAuthenticator``, one per ZeroMQ context) that
accepts only the allowlisted public keys and logs every refusal; refused peers get nothing while
the server keeps serving the others. CURVE also encrypts every message.

For two machines copy ``server.key`` + ``server.key_secret`` + ``authorized_clients/`` to the one
that binds and ``server.key`` + ``client.key`` + ``client.key_secret`` to the one that connects
(``docs/security.md``).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator
from zmq.utils.monitor import recv_monitor_message

log = structlog.get_logger()

SERVER_NAME, CLIENT_NAME = "server", "client"
AUTHORIZED_DIR = "authorized_clients"
PUBLIC_SUFFIX, SECRET_SUFFIX = ".key", ".key_secret"


class KeysError(ValueError):
    """A keys folder is missing, incomplete or unreadable (one line, for a CLI to show)."""


def default_keys_dir() -> Path:
    """``artifacts/keys`` of this checkout."""
    from navi_contracts.paths import artifacts_root

    return artifacts_root() / "keys"


def _certificate_text(public: bytes, secret: bytes | None) -> str:
    kind = "Secret" if secret is not None else "Public"
    lines = [
        f"#   ZeroMQ CURVE **{kind}** Certificate (written by navi-keys generate)",
        "#   A secret certificate must stay private: do not share it or loosen its permissions."
        if secret is not None
        else "#   Public: safe to copy to every peer.",
        "",
        "metadata",
        "curve",
        f'    public-key = "{public.decode("ascii")}"',
    ]
    if secret is not None:
        lines.append(f'    secret-key = "{secret.decode("ascii")}"')
    return "\n".join(lines) + "\n"


def _write_private(path: Path, text: str, mode: int) -> None:
    """Write ``text`` atomically with ``mode`` from the first byte (mkstemp creates 0600)."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="ascii") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def generate_keys(folder: Path, *, overwrite: bool = False) -> list[Path]:
    """Write a server and a client key pair and allowlist the client.

    Args:
        folder: where to write (created, 0700).
        overwrite: replace existing keys (every peer then needs the new files).

    Returns:
        The files written.

    Raises:
        KeysError: keys already exist there and ``overwrite`` is False.
    """
    folder = Path(folder)
    existing = [folder / f"{name}{SECRET_SUFFIX}" for name in (SERVER_NAME, CLIENT_NAME)]
    if not overwrite and any(path.exists() for path in existing):
        raise KeysError(f"keys already exist in {folder}; pass --overwrite to replace them")
    (folder / AUTHORIZED_DIR).mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    written = []
    for name in (SERVER_NAME, CLIENT_NAME):
        public, secret = zmq.curve_keypair()
        secret_path = folder / f"{name}{SECRET_SUFFIX}"
        public_path = folder / f"{name}{PUBLIC_SUFFIX}"
        _write_private(secret_path, _certificate_text(public, secret), 0o600)
        _write_private(public_path, _certificate_text(public, None), 0o644)
        written += [public_path, secret_path]
        if name == CLIENT_NAME:
            allowed = folder / AUTHORIZED_DIR / f"{name}{PUBLIC_SUFFIX}"
            _write_private(allowed, _certificate_text(public, None), 0o644)
            written.append(allowed)
    return written


def _load(path: Path) -> tuple[bytes, bytes | None] | None:
    if not path.is_file():
        return None
    try:
        public, secret = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as error:
        raise KeysError(f"cannot read key file {path}: {error}") from error
    if public is None:
        raise KeysError(f"{path} holds no public key")
    return public, secret


def _secret_of(folder: Path, name: str) -> tuple[bytes, bytes] | None:
    loaded = _load(folder / f"{name}{SECRET_SUFFIX}")
    if loaded is None:
        return None
    public, secret = loaded
    if secret is None:
        raise KeysError(f"{folder / (name + SECRET_SUFFIX)} holds no secret key")
    if os.name == "posix" and (folder / f"{name}{SECRET_SUFFIX}").stat().st_mode & 0o077:
        log.warning("contracts.curve.secret_readable", path=str(folder / f"{name}{SECRET_SUFFIX}"))
    return public, secret


@dataclass(frozen=True)
class CurveKeys:
    """The keys of one folder; a process uses the server half when it binds, the client half when it connects.

    Attributes:
        folder: where the keys were read from.
        server_public: the server's public key (z85).
        server_secret: the server's secret key, when this machine binds.
        client_public: this client's public key, when this machine connects.
        client_secret: this client's secret key, when this machine connects.
        allowed_clients: client public keys a server accepts.
    """

    folder: Path
    server_public: bytes
    server_secret: bytes | None
    client_public: bytes | None
    client_secret: bytes | None
    allowed_clients: frozenset[bytes]

    @classmethod
    def load(cls, folder: Path | str) -> CurveKeys:
        """Read a keys folder.

        Raises:
            KeysError: no folder, no server public key, or an unreadable file.
        """
        folder = Path(folder)
        if not folder.is_dir():
            raise KeysError(f"keys folder {folder} does not exist; create it with: navi-keys generate")
        server = _secret_of(folder, SERVER_NAME) or _load(folder / f"{SERVER_NAME}{PUBLIC_SUFFIX}")
        if server is None:
            raise KeysError(
                f"{folder} has no {SERVER_NAME}{PUBLIC_SUFFIX}: every peer needs the server's public key"
            )
        client = _secret_of(folder, CLIENT_NAME)
        allowed = set()
        authorized = folder / AUTHORIZED_DIR
        if authorized.is_dir():
            for path in sorted(authorized.glob(f"*{PUBLIC_SUFFIX}")):
                loaded = _load(path)
                if loaded is not None:
                    allowed.add(loaded[0])
        return cls(
            folder=folder,
            server_public=server[0],
            server_secret=server[1],
            client_public=client[0] if client else None,
            client_secret=client[1] if client else None,
            allowed_clients=frozenset(allowed),
        )

    def require(self, *, server: bool = False, client: bool = False) -> CurveKeys:
        """Check that this folder holds the halves a process needs; returns ``self``.

        Raises:
            KeysError: the server half (to bind) or the client half (to connect) is missing.
        """
        if server and self.server_secret is None:
            raise KeysError(
                f"{self.folder} has no {SERVER_NAME}{SECRET_SUFFIX}: a process that binds needs it"
            )
        if server and not self.allowed_clients:
            raise KeysError(f"{self.folder / AUTHORIZED_DIR} lists no client keys: nobody could connect")
        if client and (self.client_secret is None or self.client_public is None):
            raise KeysError(
                f"{self.folder} has no {CLIENT_NAME}{SECRET_SUFFIX}: a process that connects needs it"
            )
        return self

    def secure(self, sock: zmq.Socket[Any], *, server: bool) -> None:
        """Make ``sock`` a CURVE server (it binds) or client (it connects); call before bind/connect.

        Raises:
            KeysError: this folder lacks the half the role needs.
        """
        self.require(server=server, client=not server)
        if server:
            assert self.server_secret is not None
            sock.zap_domain = _authorise(sock.context, self.allowed_clients).encode()
            sock.curve_secretkey = self.server_secret
            sock.curve_publickey = self.server_public
            sock.curve_server = True
            return
        assert self.client_secret is not None and self.client_public is not None
        sock.curve_secretkey = self.client_secret
        sock.curve_publickey = self.client_public
        sock.curve_serverkey = self.server_public


def load_keys(folder: Path | str | None, *, server: bool = False, client: bool = False) -> CurveKeys | None:
    """:meth:`CurveKeys.load` + :meth:`CurveKeys.require`, or None when no folder is given (plain mode).

    Raises:
        KeysError: the folder is unusable for the roles asked for.
    """
    if folder is None or str(folder) == "":
        return None
    return CurveKeys.load(folder).require(server=server, client=client)


class _Allowlists:
    """ZAP credentials provider: one allowlist per ZAP domain; logs every refusal."""

    def __init__(self) -> None:
        self.by_domain: dict[str, frozenset[bytes]] = {}

    def callback(self, domain: str, key: bytes) -> bool:
        allowed = key in self.by_domain.get(domain, frozenset())
        if not allowed:
            log.warning("contracts.curve.client_refused", domain=domain, client_key=key.decode("ascii"))
        return allowed


_HANDSHAKE_FAILURES = zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
_WATCHED = _HANDSHAKE_FAILURES | zmq.EVENT_MONITOR_STOPPED


def watch_handshakes(sock: zmq.Socket[Any], endpoint: str) -> None:
    """Log ``contracts.curve.handshake_failed`` for peers that fail before the allowlist is asked.

    A peer with no key (plain ZeroMQ) or with the wrong server key never reaches the ZAP
    authenticator; ZeroMQ only reports it on the socket monitor, which a daemon thread reads until
    the socket closes (``EVENT_MONITOR_STOPPED``). Refused keys are logged by the authenticator.
    """
    monitor = sock.get_monitor_socket(_WATCHED)
    threading.Thread(
        target=_log_handshake_failures, args=(monitor, endpoint), name="navi-curve-monitor", daemon=True
    ).start()


def _log_handshake_failures(monitor: zmq.Socket[Any], endpoint: str) -> None:
    try:
        while True:
            event = recv_monitor_message(monitor)
            if event["event"] == zmq.EVENT_MONITOR_STOPPED:
                return
            log.warning(
                "contracts.curve.handshake_failed",
                endpoint=endpoint,
                zmq_event=zmq.Event(event["event"]).name,
                reason="no CURVE key, or not this server's public key",
            )
    except zmq.ZMQError:  # context terminated at interpreter exit
        return
    finally:
        monitor.close(linger=0)


_LOCK = threading.Lock()
_AUTHENTICATORS: dict[int, tuple[zmq.Context[Any], ThreadAuthenticator, _Allowlists]] = {}


def _authorise(context: zmq.Context[Any], allowed: frozenset[bytes]) -> str:
    """Start (once per context) the ZAP authenticator and register ``allowed`` under its own domain.

    Returns:
        The ZAP domain a server socket with this allowlist must carry.
    """
    domain = "navi-" + hashlib.sha256(b"\n".join(sorted(allowed))).hexdigest()[:16]
    with _LOCK:
        entry = _AUTHENTICATORS.get(id(context))
        if entry is None or entry[0] is not context or not entry[1].is_alive():
            authenticator = ThreadAuthenticator(context)
            authenticator.start()
            entry = (context, authenticator, _Allowlists())
            _AUTHENTICATORS[id(context)] = entry
        _, authenticator, allowlists = entry
        if domain not in allowlists.by_domain:
            allowlists.by_domain[domain] = allowed
            authenticator.configure_curve_callback(domain, credentials_provider=allowlists)
    return domain
