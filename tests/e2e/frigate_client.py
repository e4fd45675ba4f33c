"""Frigate's zmq detector client, as its plugin
(frigate/detectors/plugins/zmq_ipc.py) talks: a REQ socket with 200 ms send
and receive timeouts and linger 0, the model handshake once per socket (30 s
for its answer), each frame as [JSON header, C-order tensor bytes], and on a
timeout a new socket, a new handshake, and zeros for that frame. Used by
test_ospreyd_frigate.py and bench/frigate.py."""
import json

import numpy as np
import zmq


class FrigateZmq:
    """Frigate's zmq detector, as its plugin talks: one request at a time."""

    def __init__(self, ctx, endpoint, model_name, timeout_ms=200):
        self.ctx, self.endpoint, self.model_name = ctx, endpoint, model_name
        self.timeout_ms = timeout_ms
        self.sock = None
        self.timeouts = 0
        self.ready = False
        self.handshake = None
        self._create_socket()
        self._initialize_model()

    def _create_socket(self):
        if self.sock is not None:
            self.sock.close(linger=0)
        self.sock = self.ctx.socket(zmq.REQ)
        self.sock.setsockopt(zmq.RCVTIMEO, self.timeout_ms)
        self.sock.setsockopt(zmq.SNDTIMEO, self.timeout_ms)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(self.endpoint)

    def _ask(self, parts):
        """A handshake or an upload: parts out, one JSON part back within 30 s."""
        self.sock.send_multipart(parts)
        self.sock.setsockopt(zmq.RCVTIMEO, 30000)
        try:
            frames = self.sock.recv_multipart()
        finally:
            self.sock.setsockopt(zmq.RCVTIMEO, self.timeout_ms)
        assert len(frames) == 1, frames
        return json.loads(frames[0].decode("utf-8"))

    def _initialize_model(self):
        self.handshake = self._ask([json.dumps({"model_request": True,
                                                "model_name": self.model_name}).encode("utf-8")])
        self.ready = bool(self.handshake.get("model_available") and self.handshake.get("model_loaded"))

    def upload(self, name, data):
        return self._ask([json.dumps({"model_data": True, "model_name": name}).encode(), data])

    def send_raw(self, parts):
        """Any parts; the reply parts, or None on Frigate's timeout."""
        try:
            self.sock.send_multipart(parts)
            return self.sock.recv_multipart()
        except zmq.Again:
            self.timeouts += 1
            self._create_socket()
            self._initialize_model()
            return None

    def detect_raw(self, tensor):
        header = json.dumps({"shape": list(tensor.shape), "dtype": str(tensor.dtype.name),
                             "model_type": "ssd"}).encode("utf-8")
        frames = self.send_raw([header, memoryview(tensor.tobytes(order="C"))])
        return None if frames is None else decode(frames)

    def close(self):
        self.sock.close(linger=0)


def decode(frames):
    """The reply as Frigate reads it, checked to be what osprey promises."""
    assert len(frames) == 2, frames
    header = json.loads(frames[0].decode("utf-8"))
    assert header == {"shape": [20, 6], "dtype": "float32"}, header
    assert len(frames[1]) == 480
    return np.frombuffer(frames[1], dtype=np.float32).reshape((20, 6))
