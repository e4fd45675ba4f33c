# shellcheck shell=bash
# scripts/lib.sh: helpers shared by scripts/bootstrap.sh and scripts/fetch-assets.sh.
# Sourced, not run.  Everything it prints goes to stderr.
#
# Environment:
#   OSPREY_CACHE          cache directory (default: $HOME/.cache/osprey)
#   OSPREY_DEBIAN_MIRROR  Debian mirror for `apt-get download` (default: http://deb.debian.org/debian)

OSPREY_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck disable=SC2034 # used by the scripts that source this file
OSPREY_REPO=$(dirname "$OSPREY_SCRIPTS")
PROG=${0##*/}

CACHE=${OSPREY_CACHE:-${HOME:?HOME is not set; set OSPREY_CACHE}/.cache/osprey}
case $CACHE in /*) ;; *) CACHE=$PWD/$CACHE ;; esac
PKGS=$CACHE/pkgs
DEBIAN_MIRROR=${OSPREY_DEBIAN_MIRROR:-http://deb.debian.org/debian}

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

# Unexpected failures (set -e) name the command and the line.
set -E
trap 'die "command failed (status $?) at ${BASH_SOURCE[0]##*/}:$LINENO: $BASH_COMMAND"' ERR

# --- a per-run work directory inside the cache (same file system, so files
# --- are moved into place atomically), removed on exit -------------------
WORK=
_cleanup() { if [[ -n $WORK ]]; then rm -rf "$WORK"; fi; }
trap _cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# Call at top level (not in $(...)): creates $CACHE, $PKGS and $WORK, and
# locks $CACHE (flock on the directory) so that two runs don't download the
# same thing at once.
prepare_cache() {
    [[ -z $WORK ]] || return 0
    mkdir -p "$CACHE" "$PKGS" || die "cannot create the cache directory $CACHE (set OSPREY_CACHE?)"
    if command -v flock >/dev/null; then
        exec 9<"$CACHE" || die "cannot open $CACHE"
        if ! flock -n 9; then
            log "waiting for another osprey script that has locked $CACHE ..."
            flock 9
        fi
    fi
    WORK=$(mktemp -d "$CACHE/.work.XXXXXX") || die "cannot create a temporary directory in $CACHE"
}

sha256_of() { # FILE -> prints the hex digest
    local h
    h=$(sha256sum -- "$1") || die "sha256sum $1 failed"
    printf '%s\n' "${h%% *}"
}

need_cmd() { # CMD WHAT-TO-INSTALL
    command -v "$1" >/dev/null || die "'$1' not found: $2"
}

# --- npm ------------------------------------------------------------------
# npm_fetch SPEC FILE: make sure $PKGS/FILE is the tarball `npm pack SPEC`
# writes; FRESH=1 if it was downloaded now, 0 if it was there.  Never
# installs anything (no lifecycle scripts run).  npm's own cache is a
# throw-away directory: the tarball kept in $PKGS is the cache.
FRESH=0
npm_fetch() {
    local spec=$1 file=$2 d
    local -a out
    FRESH=0
    [[ -s $PKGS/$file ]] && return 0
    FRESH=1
    need_cmd npm "install Node.js and npm (scripts/bootstrap.sh does)"
    d=$(mktemp -d "$WORK/npm.XXXXXX")
    log "downloading npm package $spec ..."
    if ! (cd "$d" && npm pack "$spec" --silent --ignore-scripts --no-fund --no-audit \
            --no-update-notifier --cache "$d/.npm-cache" >/dev/null 2>"$d/.err"); then
        sed 's/^/    /' "$d/.err" >&2
        die "npm pack $spec failed (registry: $(npm config get registry 2>/dev/null || echo '?'))"
    fi
    out=("$d"/*.tgz)
    [[ ${#out[@]} -eq 1 && -f ${out[0]} ]] || die "npm pack $spec did not produce one .tgz"
    mv -f "${out[0]}" "$PKGS/$file"
    rm -rf "$d"
}

# --- Debian packages, downloaded (not installed) through a private apt ----
# --- configuration: the system's sources, lists and caches are untouched --
# _apt_private SUITE: set APT_OPTS to a private apt state that knows
# Debian's SUITE main (its index is read once per run).
APT_OPTS=()
declare -A _APT_READY=()
_apt_private() {
    local suite=$1 a=$WORK/apt-$1 kr=/usr/share/keyrings/debian-archive-keyring.gpg opt=
    APT_OPTS=(-q
        -oDir::Etc::SourceList="$a/sources.list" -oDir::Etc::SourceParts="$a/empty"
        -oDir::Etc::Preferences="$a/empty/none" -oDir::Etc::PreferencesParts="$a/empty"
        -oDir::State::Lists="$a/lists" -oDir::Cache="$a/cache"
        -oDir::Cache::Archives="$a/archives"
        -oAcquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false
        -oAcquire::Languages=none -oDebug::NoLocking=1)
    # As root apt drops to the _apt user, which cannot write into $WORK.
    [[ $EUID -ne 0 ]] || APT_OPTS+=(-oAPT::Sandbox::User=root)
    [[ -z ${_APT_READY[$suite]:-} ]] || return 0

    need_cmd apt-get "downloading Debian packages needs apt (Debian or a derivative)"
    mkdir -p "$a/lists/partial" "$a/archives/partial" "$a/cache" "$a/empty"
    [[ -r $kr ]] && opt="[signed-by=$kr] "
    printf 'deb %s%s %s main\n' "$opt" "$DEBIAN_MIRROR" "$suite" >"$a/sources.list"
    log "reading Debian's package index ($suite main, $DEBIAN_MIRROR) into a private apt state ..."
    if ! apt-get "${APT_OPTS[@]}" update >"$a/update.log" 2>&1; then
        sed 's/^/    /' "$a/update.log" >&2
        die "apt-get update of a private index ($DEBIAN_MIRROR $suite main) failed"
    fi
    _APT_READY[$suite]=1
}

# deb_fetch NAME SUITE: make sure $PKGS holds NAME_*.deb (downloaded from
# SUITE); sets DEB to its path, and FRESH as npm_fetch does.
DEB=
# shellcheck disable=SC2034 # FRESH is read by the callers
deb_fetch() {
    local name=$1 suite=$2 d
    local -a have
    FRESH=0
    have=("$PKGS/${name}"_*.deb)
    if [[ -f ${have[-1]} ]]; then DEB=${have[-1]}; return 0; fi
    FRESH=1
    _apt_private "$suite"
    d=$(mktemp -d "$WORK/deb.XXXXXX")
    log "downloading Debian package $name ($suite) ..."
    if ! (cd "$d" && apt-get "${APT_OPTS[@]}" download "$name/$suite" >"$d/.log" 2>&1); then
        sed 's/^/    /' "$d/.log" >&2
        die "apt-get download $name/$suite failed"
    fi
    have=("$d/${name}"_*.deb)
    [[ -f ${have[0]} ]] || die "apt-get download $name/$suite produced no .deb"
    DEB=$PKGS/${have[0]##*/}
    mv -f "${have[0]}" "$DEB"
    rm -rf "$d"
}

# pkg_extract PKG DIR MEMBER...: extract MEMBERs (paths as in the package,
# without a leading ./) of PKG (a .deb's data part, or an npm .tgz) into DIR,
# with the current time as mtime.  Returns 1 (the tool has said why) if that
# fails, e.g. because PKG is damaged.
pkg_extract() {
    local pkg=$1 dir=$2 err
    shift 2
    mkdir -p "$dir"
    err=$(mktemp "$WORK/extract.XXXXXX")
    if case $pkg in
        *.deb) dpkg-deb --fsys-tarfile "$pkg" | tar -x -m -f - -C "$dir" "${@/#/./}" ;;
        *) tar -x -m -z -f "$pkg" -C "$dir" "$@" ;;
        esac 2>"$err"
    then
        rm -f "$err"
        return 0
    fi
    sed 's/^/    /' "$err" >&2
    rm -f "$err"
    return 1
}
