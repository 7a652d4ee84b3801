"""Counting the driver's round trips to the JVM (py4j commands sent) inside a block."""

import gc
import threading
from contextlib import contextmanager


@contextmanager
def counted():
    """Yields a one-item list holding the number of commands this thread has sent to the JVM so far in the block
    (not another thread's: a night or a pool left running by an earlier test may be talking to the JVM too). The
    garbage of earlier tests is collected first and no collection runs inside: a JVM object's release is a command."""
    from py4j import clientserver

    sent, mine = [0], threading.get_ident()
    send = clientserver.ClientServerConnection.send_command

    def counting(self, command):
        if threading.get_ident() == mine:
            sent[0] += 1
        return send(self, command)

    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    clientserver.ClientServerConnection.send_command = counting
    try:
        yield sent
    finally:
        clientserver.ClientServerConnection.send_command = send
        if enabled:
            gc.enable()
