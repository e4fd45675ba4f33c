#!/bin/sh
# The Python pool worker as a server loadgen can run (--server): inside the
# tree bench/peer/setup.sh built, on this process's stdin/stdout. /proc and
# /sys are mounted in a private mount namespace, so they vanish with the
# process whatever way it ends. exec all the way down: the worker keeps this
# process's pid, so loadgen's CPU and memory figures are the worker's.
root=${OSPREY_PEER_ROOT:-${OSPREY_CACHE:-$HOME/.cache/osprey}/peer/root}
if [ ! -f "$root/.osprey-peer-ready" ] || [ ! -f "$root/peer/inference_pool.py" ]; then
    echo "worker.sh: no prepared tree at $root (run bench/peer/setup.sh first)" >&2
    exit 1
fi
exec unshare --mount --propagation private /bin/sh -c '
    mount -t proc proc "$1/proc" && mount -t sysfs sysfs "$1/sys" || exit 1
    exec chroot "$1" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
        /usr/bin/python3 /peer/inference_pool.py' worker.sh "$root"
