"""A real RTSP server for the tests (GStreamer's gst-rtsp-server, Debian's
gir1.2-gst-rtsp-server-1.0): serves a live 320x240, 10 frames/s moving-ball
picture as RTP/JPEG on rtsp://127.0.0.1:PORT/PATH.

    rtsp_server.py PORT /PATH      prints "ready" once it listens
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def main():
    port, path = sys.argv[1], sys.argv[2]
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(port)
    factory = GstRtspServer.RTSPMediaFactory()
    # RTP/JPEG carries 4:2:0 only: say so before the encoder
    factory.set_launch("( videotestsrc is-live=true pattern=ball ! "
                       "video/x-raw,format=I420,width=320,height=240,framerate=10/1 ! "
                       "jpegenc ! rtpjpegpay name=pay0 pt=26 )")
    factory.set_shared(True)
    server.get_mount_points().add_factory(path, factory)
    if server.attach(None) == 0:
        sys.exit(f"cannot listen on port {port}")
    print("ready", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
