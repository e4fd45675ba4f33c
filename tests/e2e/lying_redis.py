"""A Redis server that lies about the size of its replies (issue 32): it
speaks just enough RESP2 to be connected to, answers +OK to every command,
and answers the commands named in `lie_to` with the header of a bulk
string of `announce` bytes, then streams zeros until the peer hangs up or
`limit` bytes have gone. It records, per connection, the commands it
received and how many bytes of the lie it sent before the peer stopped
reading; a client that buffers the lie whole takes all of `limit`.
`replies` answers other commands with canned RESP bytes instead of +OK."""
import socket
import threading

from ospreyd_client import free_port

CHUNK = 1 << 20


class LyingRedis:
    def __init__(self, announce=2 ** 31, limit=1 << 30, lie_to=("XREADGROUP", "XAUTOCLAIM"),
                 replies=None):
        self.announce, self.limit = announce, limit
        self.replies = {k.upper().encode(): v for k, v in (replies or {}).items()}
        self.lie_to = {c.upper().encode() for c in lie_to}
        self.port = free_port()
        self.lies = []  # bytes of the lie sent, per lie told (appended when it ends)
        self.commands = []
        self.connections = 0
        self.lock = threading.Lock()
        self.sock = socket.create_server(("127.0.0.1", self.port))
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, stream="cams"):
        return f"redis://127.0.0.1:{self.port}/{stream}"

    def close(self):
        self.closed = True
        self.sock.close()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        f = c.makefile("rb")
        try:
            while True:
                head = f.readline()
                if not head.startswith(b"*"):
                    return
                args = []
                for _ in range(int(head[1:])):
                    n = int(f.readline()[1:])
                    args.append(f.read(n + 2)[:-2])
                with self.lock:
                    self.commands.append(args[0].upper())
                if args[0].upper() in self.lie_to:
                    self._lie(c)
                    return
                c.sendall(self.replies.get(args[0].upper(), b"+OK\r\n"))
        except (OSError, ValueError):
            return
        finally:
            f.close()
            c.close()

    def _lie(self, c):
        sent = 0
        zeros = bytes(CHUNK)
        try:
            c.sendall(b"$%d\r\n" % self.announce)
            while sent < self.limit:
                c.sendall(zeros)
                sent += CHUNK
        except OSError:
            pass
        with self.lock:
            self.lies.append(sent)
