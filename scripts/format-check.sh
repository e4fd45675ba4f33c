#!/usr/bin/env bash
# scripts/format-check.sh: whether the tracked C sources (*.c, *.h) are laid
# out as the repository's .clang-format says. Prints each file clang-format
# would change and exits 1 if there is any; changes nothing. Run from
# anywhere; `make format-check` calls it.
#
# Environment:
#   CLANG_FORMAT   the clang-format to run (default: clang-format; the
#                  .clang-format was measured with Debian 12's clang-format 14)
set -euo pipefail

cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
PROG=${0##*/}

command -v "$CLANG_FORMAT" > /dev/null ||
    { echo "$PROG: $CLANG_FORMAT not found (Debian: apt-get install clang-format)" >&2; exit 2; }
[[ -f .clang-format ]] || { echo "$PROG: no .clang-format at $(pwd)" >&2; exit 2; }

differ=0
total=0
while IFS= read -r -d '' f; do
    total=$((total + 1))
    if ! "$CLANG_FORMAT" --style=file --dry-run --Werror "$f" > /dev/null 2>&1; then
        echo "$f"
        differ=$((differ + 1))
    fi
done < <(git ls-files -z -- '*.c' '*.h')

if ((differ)); then
    echo "$PROG: $differ of $total C files differ from .clang-format" \
        "(see one with: $CLANG_FORMAT --style=file FILE | diff FILE -)" >&2
    exit 1
fi
echo "$PROG: all $total C files match .clang-format" >&2
