#!/bin/sh
# The Python pool worker as a server loadgen can run (--server): inside the
# tree bench/peer/setup.sh built, on this process's stdin/stdout. /proc and
# /sys (ONNX Runtime reads the CPU topology there) are mounted in a private
# mount namespace, so they vanish with the process however it ends. exec all
# the way down: the worker keeps this process's pid, so loadgen's CPU and
# memory figures are the worker's.
#
# With arguments, runs another script of /peer in the tree instead:
#   worker.sh rawloop.py MODEL SECONDS
root=${OSPREY_PEER_ROOT:-${OSPREY_CACHE:-$HOME/.cache/osprey}/peer/root}
if [ ! -f "$root/.osprey-peer-ready" ] || [ ! -f "$root/peer/inference_pool.py" ]; then
    echo "worker.sh: no prepared tree at $root (run bench/peer/setup.sh first)" >&2
    exit 1
fi
[ $# -gt 0 ] || set -- inference_pool.py
script=/peer/$1
shift
exec unshare --mount --propagation private /bin/sh -c '
    r=$1; shift
    mount -t proc proc "$r/proc" && mount -t sysfs sysfs "$r/sys" || exit 1
    exec chroot "$r" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 /usr/bin/python3 "$@"
' worker.sh "$root" "$script" "$@"
