#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# scripts/bootstrap.sh: install what osprey's build and tests need, and find
# or fetch ONNX Runtime.  See --help.
set -euo pipefail

ORT_VERSION=1.30.0
ORT_NPM=onnxruntime-node@$ORT_VERSION
ORT_TGZ=onnxruntime-node-$ORT_VERSION.tgz
ORT_MIN_API=16 # ONNX Runtime 1.16

# Debian packages for the build and the tests.
PACKAGES=(build-essential cmake pkg-config clang clang-format libclang-rt-14-dev
    libturbojpeg0-dev libyuv-dev libcjson-dev
    libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libavdevice-dev
    libcmocka-dev libpng-dev
    python3-onnx python3-numpy python3-scipy python3-pytest python3-pytest-xdist
    espeak-ng python3-pil fonts-dejavu-core ffmpeg libmosquitto-dev mosquitto mosquitto-clients
    librdkafka-dev libzmq3-dev python3-zmq
    gir1.2-gst-rtsp-server-1.0 python3-gst-1.0 gstreamer1.0-plugins-base gstreamer1.0-plugins-good
    libmicrohttpd-dev prometheus chromium
    libhiredis-dev redis-server libcurl4-openssl-dev libjemalloc-dev libsqlite3-dev)

usage() {
    cat <<EOF
Usage: scripts/bootstrap.sh [--skip-packages] [--help]

Prepares this machine to build and test osprey:

 1. Debian packages: checks (dpkg-query) that these are installed:
      ${PACKAGES[*]}
    and that an 'npm' command exists (else Debian's 'npm' package is needed).
    As root it installs the missing ones (apt-get update, then apt-get
    install --no-install-recommends).  As another user it prints the one
    'sudo apt-get install' command needed and exits 1.  Nothing is done or
    printed when nothing is missing.
 2. ONNX Runtime, the first of:
      - \$ONNXRUNTIME_ROOT if set: must contain include/onnxruntime_c_api.h
        (or include/onnxruntime/onnxruntime_c_api.h) and lib/libonnxruntime.so*
        (or lib64/); an error if not;
      - a system install: /usr (include/onnxruntime/ and libonnxruntime.so in
        the multiarch lib dir) or /usr/local;
      - the copy in \$CACHE/onnxruntime/$ORT_VERSION, fetched there when missing:
        lib/libonnxruntime.so.1 from npm $ORT_NPM (x86_64 and aarch64
        only; SHA-256 checked) and the C API headers from Debian 13's
        libonnxruntime-dev (apt-get download with a private apt state; the
        system's apt configuration is not changed).

 3. npm packages the end-to-end tests use, from tests/e2e/browser/package-lock.json
    (npm ci into tests/e2e/browser/node_modules, when the lockfile changed;
    no browser is downloaded: the tests drive Debian's chromium).

The last line on stdout is the ONNX Runtime root it settled on:
    ONNXRUNTIME_ROOT=/path
Everything else (progress, errors) goes to stderr.  Re-running is cheap.

Options:
  --skip-packages  do not check or install Debian packages (step 1)
  -h, --help       show this help

Environment:
  ONNXRUNTIME_ROOT      use this ONNX Runtime (see step 2)
  OSPREY_CACHE          cache directory (default: \$HOME/.cache/osprey)
  OSPREY_DEBIAN_MIRROR  Debian mirror for the headers download
                        (default: http://deb.debian.org/debian)

Models and media: scripts/fetch-assets.sh.
EOF
}

skip_packages=0
for arg in "$@"; do
    case $arg in
    -h | --help) usage; exit 0 ;;
    --skip-packages) skip_packages=1 ;;
    *) printf 'bootstrap.sh: unknown argument: %s (see --help)\n' "$arg" >&2; exit 2 ;;
    esac
done

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Only the final ONNXRUNTIME_ROOT= line goes to the real stdout (fd 3).
exec 3>&1 1>&2

# --- 1. Debian packages ---------------------------------------------------
check_packages() {
    local -A ok=()
    local name status missing=() p
    while IFS=$'\t' read -r name status; do
        if [[ $status == ii* ]]; then ok[${name%%:*}]=1; fi
    done < <(dpkg-query -W -f='${Package}\t${db:Status-Abbrev}\n' "${PACKAGES[@]}" 2>/dev/null || true)
    for p in "${PACKAGES[@]}"; do
        [[ -n ${ok[$p]:-} ]] || missing+=("$p")
    done
    command -v npm >/dev/null || missing+=(npm)
    [[ ${#missing[@]} -gt 0 ]] || return 0

    if [[ $EUID -ne 0 ]]; then
        log "missing Debian packages: ${missing[*]}"
        log "install them with:"
        printf '    sudo apt-get install -y --no-install-recommends %s\n' "${missing[*]}" >&2
        log "then run scripts/bootstrap.sh again (or pass --skip-packages)"
        exit 1
    fi
    log "installing missing Debian packages: ${missing[*]}"
    apt-get update || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" ||
        die "apt-get install ${missing[*]} failed"
    command -v npm >/dev/null || die "'npm' is still not on PATH after installing Debian's npm"
}

# --- 2. ONNX Runtime ------------------------------------------------------
ORT_INC=
ORT_LIB=
ort_header() { # ROOT -> sets ORT_INC to the directory holding onnxruntime_c_api.h
    local d
    for d in "$1/include" "$1/include/onnxruntime"; do
        if [[ -f $d/onnxruntime_c_api.h ]]; then ORT_INC=$d; return 0; fi
    done
    return 1
}
ort_library() { # ROOT [MULTIARCH] -> sets ORT_LIB to a libonnxruntime.so*
    local d f
    for d in "$1/lib" "$1/lib64" ${2:+"$1/lib/$2"}; do
        for f in "$d/libonnxruntime.so" "$d"/libonnxruntime.so.*; do
            if [[ -e $f ]]; then ORT_LIB=$f; return 0; fi
        done
    done
    return 1
}
ort_api_check() { # warn when the headers are older than osprey needs
    local v
    v=$(sed -n 's/^#define ORT_API_VERSION \([0-9]*\).*/\1/p' "$ORT_INC/onnxruntime_c_api.h" | head -n1)
    if [[ -n $v && $v -lt $ORT_MIN_API ]]; then
        log "warning: $ORT_INC/onnxruntime_c_api.h has ORT_API_VERSION $v; osprey needs >= $ORT_MIN_API (ONNX Runtime 1.$ORT_MIN_API)"
    fi
}

multiarch() {
    local m
    m=$(gcc -print-multiarch 2>/dev/null || true)
    [[ -n $m ]] || m=$(uname -m)-linux-gnu
    printf '%s\n' "$m"
}

ort_from_env() {
    local root=$ONNXRUNTIME_ROOT
    [[ -d $root ]] || die "ONNXRUNTIME_ROOT=$root is not a directory"
    root=$(cd "$root" && pwd -P)
    ort_header "$root" ||
        die "ONNXRUNTIME_ROOT=$root has no include/onnxruntime_c_api.h (nor include/onnxruntime/onnxruntime_c_api.h)"
    ort_library "$root" "$(multiarch)" ||
        die "ONNXRUNTIME_ROOT=$root has no lib/libonnxruntime.so* (nor lib64/)"
    if [[ ! -e ${ORT_LIB%/*}/libonnxruntime.so ]]; then
        log "warning: ${ORT_LIB%/*} has ${ORT_LIB##*/} but no libonnxruntime.so symlink; the linker and CMake's find_library need one"
    fi
    ort_api_check
    ORT_ROOT=$root
}

ort_from_system() {
    local ma root
    ma=$(multiarch)
    for root in /usr /usr/local; do
        if ort_header "$root" && ort_library "$root" "$ma" &&
            [[ -e ${ORT_LIB%/*}/libonnxruntime.so ]]; then
            log "using the system's ONNX Runtime: $ORT_INC, $ORT_LIB"
            ort_api_check
            ORT_ROOT=$root
            return 0
        fi
    done
    return 1
}

ort_complete() { # DIR: a finished cache copy?
    [[ -s $1/lib/libonnxruntime.so.1 && -L $1/lib/libonnxruntime.so &&
        -s $1/include/onnxruntime_c_api.h ]]
}

ort_fetch() {
    local dest=$CACHE/onnxruntime/$ORT_VERSION arch sha stage member got attempt why
    case $(uname -m) in
    x86_64 | amd64)
        arch=x64
        sha=ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23 ;;
    aarch64 | arm64)
        arch=arm64
        sha=1f549d46250b005580b597f4164984aaf75b3bcb9f3aeb07c7f8a8fe60b23c76 ;;
    *)
        die "no prebuilt ONNX Runtime for $(uname -m) in npm $ORT_NPM (it has x86_64 and aarch64); install ONNX Runtime (>= 1.16, include/ + lib/) and set ONNXRUNTIME_ROOT" ;;
    esac
    member=package/bin/napi-v6/linux/$arch/libonnxruntime.so.1

    prepare_cache
    ort_complete "$dest" && { ORT_ROOT=$dest; return 0; } # done by a concurrent run
    stage=$WORK/ort
    for attempt in 1 2; do
        rm -rf "$stage" "$WORK/x"
        mkdir -p "$stage/lib" "$stage/include"
        npm_fetch "$ORT_NPM" "$ORT_TGZ"
        log "extracting linux/$arch/libonnxruntime.so.1 from $ORT_TGZ ..."
        if pkg_extract "$PKGS/$ORT_TGZ" "$WORK/x" "$member"; then
            got=$(sha256_of "$WORK/x/$member")
            if [[ $got == "$sha" ]]; then break; fi
            why="a wrong libonnxruntime.so.1: expected sha256 $sha, got $got"
        else
            why="cannot extract $member from it"
        fi
        rm -f "$PKGS/$ORT_TGZ"
        if [[ $FRESH -eq 1 || $attempt -eq 2 ]]; then
            die "npm $ORT_NPM: $why (deleted $PKGS/$ORT_TGZ)"
        fi
        log "the cached $ORT_TGZ is damaged ($why); downloading it again"
    done
    mv "$WORK/x/$member" "$stage/lib/libonnxruntime.so.1"
    chmod 0644 "$stage/lib/libonnxruntime.so.1"
    ln -s libonnxruntime.so.1 "$stage/lib/libonnxruntime.so"

    for attempt in 1 2; do
        deb_fetch libonnxruntime-dev trixie
        log "extracting the C API headers from ${DEB##*/} ..."
        rm -rf "$WORK/h"
        if pkg_extract "$DEB" "$WORK/h" usr/include/onnxruntime; then break; fi
        rm -f "$DEB"
        if [[ $FRESH -eq 1 || $attempt -eq 2 ]]; then
            die "cannot extract usr/include/onnxruntime from ${DEB##*/} (deleted it)"
        fi
        log "the cached ${DEB##*/} is damaged; downloading it again"
    done
    local h=("$WORK/h/usr/include/onnxruntime/"*.h)
    [[ -f $WORK/h/usr/include/onnxruntime/onnxruntime_c_api.h ]] ||
        die "${DEB##*/} has no usr/include/onnxruntime/onnxruntime_c_api.h"
    cp "${h[@]}" "$stage/include/"

    mkdir -p "${dest%/*}"
    rm -rf "$dest"
    mv "$stage" "$dest"
    ORT_INC=$dest/include
    ort_api_check
    log "ONNX Runtime $ORT_VERSION ($arch) is in $dest"
    ORT_ROOT=$dest
}

if [[ $skip_packages -eq 0 ]]; then
    check_packages
fi

# --- 3. npm packages for the tests -----------------------------------------
npm_tests() {
    local dir stamp want
    dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/browser" && pwd)
    stamp=$dir/node_modules/.osprey-lock-sha256
    want=$(sha256_of "$dir/package-lock.json")
    [[ -f $stamp && $(cat "$stamp") == "$want" ]] && return 0
    need_cmd npm "install Debian's npm"
    log "installing the tests' npm packages (tests/e2e/browser/package-lock.json) ..."
    (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund \
        --no-update-notifier) >&2 || die "npm ci in $dir failed"
    printf '%s\n' "$want" > "$stamp"
}
npm_tests

ORT_ROOT=
if [[ -n ${ONNXRUNTIME_ROOT:-} ]]; then
    ort_from_env
elif ! ort_from_system; then
    if ort_complete "$CACHE/onnxruntime/$ORT_VERSION"; then
        ORT_ROOT=$CACHE/onnxruntime/$ORT_VERSION
    else
        ort_fetch
    fi
fi

printf 'ONNXRUNTIME_ROOT=%s\n' "$ORT_ROOT" >&3
