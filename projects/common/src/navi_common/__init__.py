"""navi-common: the process plumbing every Navi service shares, on top of the wire layer.

What lives where:

- :mod:`~navi_common.transport`: the ZeroMQ transport (PUB/SUB, REQ/REP, CURVE keys, endpoints,
  transport errors) and the ``navi-keys`` command.
- :mod:`~navi_common.settings`: the base of every package's settings; :mod:`~navi_common.cli_options`
  turns settings fields into click options.
- :mod:`~navi_common.logging`, :mod:`~navi_common.signals`: logging setup and stop signals.
- :mod:`~navi_common.atomic`, :mod:`~navi_common.provenance`: atomic file writes, git revision and
  package versions for artifacts.
- :mod:`~navi_common.lazy_exports`: the lazy ``__getattr__`` of the packages that load torch late;
  :mod:`~navi_common.panorama`: the panorama image both the dashboard and the Gymnasium adapter draw.

Why not in navi-contracts: contracts is the wire layer alone (what the bytes and values on a socket
must be), small enough to read in one sitting and with no socket, CLI or logging dependency, so a
tool that only reads or writes messages needs nothing else. This package depends on contracts, never
the other way round.
"""

from navi_common.logging import configure_logging
from navi_common.settings import NaviSettings, SettingsGroup
from navi_common.transport.errors import NaviTransportError, PeerTimeoutError, RemoteError
from navi_common.transport.pubsub import Publisher, Subscriber
from navi_common.transport.reqrep import RepServer, ReqClient
from navi_common.transport.sockets import free_tcp_endpoint

__all__ = [
    "NaviSettings",
    "NaviTransportError",
    "PeerTimeoutError",
    "Publisher",
    "RemoteError",
    "RepServer",
    "ReqClient",
    "SettingsGroup",
    "Subscriber",
    "configure_logging",
    "free_tcp_endpoint",
]
__version__ = "0.1.0"
