"""A real RTSP server for the tests (GStreamer's gst-rtsp-server, Debian's
gir1.2-gst-rtsp-server-1.0): serves a live 320x240 moving-ball picture as
RTP/JPEG on rtsp://127.0.0.1:PORT/PATH, over TCP or UDP as the client asks.

    rtsp_server.py PORT /PATH [--fps N] [--auth USER:PASSWORD]
                   [--file CLIP [--endless] | --live DIR]

--fps: frames a second (default 10); --auth: the server asks for this login
(basic authentication) and refuses any other; --file: instead of the ball,
an AVI of JPEG frames (ffmpeg -c:v mjpeg -pix_fmt yuvj420p) played at its
own rate, from its start to each client that connects; --endless: the
clip served without its duration, as a camera is (a client that loses
it reconnects instead of taking it for the end of a file); --live: the
JPEG files of DIR (ffmpeg -i CLIP -c:v copy -f image2 DIR/%05d.jpg) in
name order at --fps, over and over, from the first to each client, as
a camera that never ends (an open range: no duration, so clients take
it as live). Prints "ready" once it listens.
"""
import argparse
import sys
from pathlib import Path

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def live_media(media, frames, fps):
    """Feed one client's appsrc: frame i at i/fps seconds, for ever."""
    src = media.get_element().get_child_by_name("src")
    step = Gst.SECOND // fps
    n = [0]

    def need_data(appsrc, _length):
        buf = Gst.Buffer.new_wrapped(frames[n[0] % len(frames)])
        buf.pts = buf.dts = n[0] * step
        buf.duration = step
        n[0] += 1
        appsrc.emit("push-buffer", buf)

    src.connect("need-data", need_data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port")
    ap.add_argument("path")
    ap.add_argument("--fps", type=int, default=10)
    ap.add_argument("--auth")
    ap.add_argument("--file")
    ap.add_argument("--endless", action="store_true")
    ap.add_argument("--live")
    a = ap.parse_args()
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(a.port)
    factory = GstRtspServer.RTSPMediaFactory()
    # RTP/JPEG carries 4:2:0 only: say so before the encoder
    factory.set_launch("( videotestsrc is-live=true pattern=ball ! "
                       f"video/x-raw,format=I420,width=320,height=240,framerate={a.fps}/1 ! "
                       "jpegenc ! rtpjpegpay name=pay0 pt=26 )")
    factory.set_shared(True)
    if a.file:  # a copy of the clip a client, each from its start
        # --endless: a live element beside it makes the media live, so its
        # range has no end
        live = " videotestsrc is-live=true ! fakesink" if a.endless else ""
        factory.set_launch(f"( filesrc location={a.file} ! avidemux ! jpegparse ! "
                           f"rtpjpegpay name=pay0 pt=26{live} )")
        factory.set_shared(False)
    if a.live:  # the frames a client, from the first, looped, timed at --fps
        frames = [f.read_bytes() for f in sorted(Path(a.live).glob("*.jpg"))]
        if not frames:
            sys.exit(f"no .jpg files in {a.live}")
        factory.set_launch("( appsrc name=src is-live=true format=time "
                           f"caps=image/jpeg,framerate={a.fps}/1 ! jpegparse ! "
                           "rtpjpegpay name=pay0 pt=26 )")
        factory.set_shared(False)
        factory.connect("media-configure", lambda f, media: live_media(media, frames, a.fps))
    if a.auth:
        user, password = a.auth.split(":", 1)
        auth = GstRtspServer.RTSPAuth()
        token = GstRtspServer.RTSPToken()
        token.set_string("media.factory.role", "viewer")
        auth.add_basic(GstRtspServer.RTSPAuth.make_basic(user, password), token)
        server.set_auth(auth)
        perms = GstRtspServer.RTSPPermissions()
        perms.add_permission_for_role("viewer", "media.factory.access", True)
        perms.add_permission_for_role("viewer", "media.factory.construct", True)
        factory.set_permissions(perms)
    server.get_mount_points().add_factory(a.path, factory)
    if server.attach(None) == 0:
        sys.exit(f"cannot listen on port {a.port}")
    print("ready", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
