"""Counting the driver's round trips to the JVM (py4j commands sent) inside a block."""

from contextlib import contextmanager


@contextmanager
def counted():
    """Yields a one-item list holding the number of commands the driver has sent to the JVM so far in the block."""
    from py4j import clientserver

    sent = [0]
    send = clientserver.ClientServerConnection.send_command

    def counting(self, command):
        sent[0] += 1
        return send(self, command)

    clientserver.ClientServerConnection.send_command = counting
    try:
        yield sent
    finally:
        clientserver.ClientServerConnection.send_command = send
