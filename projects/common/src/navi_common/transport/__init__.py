"""The ZeroMQ transport: how wire messages travel between processes.

``sockets`` (socket options, frame size cap, the plaintext-beyond-loopback check), ``pubsub``
(Publisher / Subscriber), ``reqrep`` (ReqClient with retries / RepServer), ``curve`` (CURVE keys and
the handshake log), ``endpoints`` (who can reach an endpoint), ``errors`` (NaviTransportError and its
subclasses) and ``keys_cli`` (the ``navi-keys`` command). Messages are encoded and decoded by
:mod:`navi_contracts.codec`.
"""
