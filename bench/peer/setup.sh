#!/bin/sh
# Prepares the Python pool worker for a side-by-side measurement with ospreyd
# (make bench-peer): a minimal Debian 13 tree, which has Python 3, numpy,
# Pillow and ONNX Runtime as distribution packages, in the asset cache; the
# worker's source copied in unchanged, with our decoders beside it; the model
# files copied in at the same absolute paths they have outside, so both
# servers can be sent byte-identical configs.
#
#   bench/peer/setup.sh WORKER_PY MODEL_FILE...
#
# Needs root (debootstrap, chroot). The tree is built once and reused; it
# lives at $OSPREY_PEER_ROOT (default $OSPREY_CACHE/peer/root). Nothing here
# touches the source tree.
set -eu

die() { echo "bench-peer: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap and chroot); run make bench-peer as root"
[ $# -ge 1 ] || die "usage: $0 WORKER_PY MODEL_FILE..."
worker=$1
shift
[ -f "$worker" ] || die "the Python pool worker '$worker' does not exist (set PEER_WORKER=path/to/inference_pool.py)"

here=$(cd "$(dirname "$0")" && pwd)
cache=${OSPREY_CACHE:-$HOME/.cache/osprey}
root=${OSPREY_PEER_ROOT:-$cache/peer/root}
suite=${PEER_SUITE:-trixie}
mirror=${PEER_MIRROR:-http://deb.debian.org/debian}
packages="python3 python3-numpy python3-pil python3-onnxruntime"
# A command in the tree, with /proc and /sys (ONNX Runtime reads the CPU
# topology there) mounted in a private mount namespace that dies with it.
in_root() {
    unshare --mount --propagation private /bin/sh -c '
        r=$1; shift
        mount -t proc proc "$r/proc" && mount -t sysfs sysfs "$r/sys" || exit 1
        exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
    ' in_root "$root" "$@"
}
check() { in_root python3 -c 'import numpy, PIL, onnxruntime' >/dev/null 2>&1; }

if [ ! -f "$root/.osprey-peer-ready" ] || ! check; then
    command -v debootstrap >/dev/null 2>&1 || {
        echo "bench-peer: installing debootstrap" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null ||
            die "apt-get install debootstrap failed"
    }
    echo "bench-peer: building a minimal Debian '$suite' tree in $root (once; a few minutes)" >&2
    rm -rf "$root.tmp"
    mkdir -p "$(dirname "$root")"
    # debootstrap resolves no virtual packages (ONNX Runtime's libre2 is one),
    # so the base system comes first and apt installs the rest inside it.
    debootstrap --variant=minbase --include=python3 "$suite" "$root.tmp" "$mirror" \
        > "$(dirname "$root")/debootstrap.log" 2>&1 ||
        die "debootstrap failed, see $(dirname "$root")/debootstrap.log"
    root_final=$root
    root=$root.tmp
    { in_root apt-get update -q && in_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends $packages; } \
        >> "$(dirname "$root_final")/debootstrap.log" 2>&1 ||
        die "apt-get install $packages in the tree failed, see $(dirname "$root_final")/debootstrap.log"
    in_root apt-get clean
    check || die "python3 in the tree cannot import numpy, PIL and onnxruntime"
    rm -rf "$root_final"
    mv "$root" "$root_final"
    root=$root_final
    touch "$root/.osprey-peer-ready"
fi

# The worker, unchanged, and our decoders beside it (it imports them by name).
# A listing that starts with the file's name and a blank line before the
# source gets those two lines dropped; the source itself is copied as it is.
mkdir -p "$root/peer"
if head -n 1 "$worker" | grep -q '\.py$' && [ -z "$(sed -n 2p "$worker")" ]; then
    tail -n +3 "$worker" > "$root/peer/inference_pool.py.new"
else
    cp "$worker" "$root/peer/inference_pool.py.new"
fi
mv "$root/peer/inference_pool.py.new" "$root/peer/inference_pool.py"
rm -rf "$root/peer/postprocessors"
cp -r "$here/postprocessors" "$root/peer/postprocessors"
rm -rf "$root/peer/postprocessors/__pycache__"
cp "$here/rawloop.py" "$root/peer/rawloop.py"

# The models (and their label files) at the paths they have outside.
for f in "$@"; do
    case $f in /*) ;; *) f=$(pwd)/$f ;; esac
    [ -f "$f" ] || die "model file $f is missing (make assets fetches the models)"
    for g in "$f" "${f%.*}.labels"; do
        [ -f "$g" ] || continue
        mkdir -p "$root$(dirname "$g")"
        cmp -s "$g" "$root$g" || cp "$g" "$root$g"
    done
done
# stdout: the tree, then what runs in it
echo "$root"
in_root python3 -c 'import sys, numpy, PIL, onnxruntime as o; print("Python %s, numpy %s, Pillow %s, ONNX Runtime %s" % (sys.version.split()[0], numpy.__version__, PIL.__version__, o.__version__))' 2>/dev/null
