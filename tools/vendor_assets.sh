#!/usr/bin/env bash
# Re-fetch the JavaScript the website ships instead of loading it from a CDN.
#
# Only this script needs the network (the npm registry, through `npm pack`). The fetched files are
# committed under book/_extra/vendor/, so building the book never does. Run it to move to a new
# version: change the pins below, run it, rebuild, run the site test, commit the result.
#
#   mathjax   the tex-mml-chtml bundle Sphinx uses, its CHTML fonts and the TeX extensions it
#             loads on demand
# (No widget manager: the site shows ipywidgets explorers as still figures; see _config.yml.)
set -euo pipefail
cd "$(dirname "$0")/.."

MATHJAX="mathjax@3.2.2"
MATHJAX_SHA512="sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw=="
DEST=book/_extra/vendor

command -v npm >/dev/null || { echo "vendor_assets.sh: npm is needed (apt-get install npm)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fetch SPEC EXPECTED_INTEGRITY DIR: npm pack into $work, check the registry's integrity, unpack.
fetch() {
    local spec=$1 expected=$2 dir=$3 meta tarball integrity
    meta=$(cd "$work" && npm pack --json --silent "$spec")
    tarball=$(node -e 'const m = JSON.parse(process.argv[1])[0]; console.log(m.filename)' "$meta")
    integrity=$(node -e 'const m = JSON.parse(process.argv[1])[0]; console.log(m.integrity)' "$meta")
    if [[ "$integrity" != "$expected" ]]; then
        echo "vendor_assets.sh: $spec has integrity $integrity, expected $expected" >&2
        echo "  (a new version? update the pin and the README after checking its contents)" >&2
        exit 1
    fi
    mkdir -p "$work/$dir"
    tar -xzf "$work/$tarball" -C "$work/$dir"
    echo "fetched $spec ($integrity)"
}

fetch "$MATHJAX" "$MATHJAX_SHA512" mathjax

rm -rf "$DEST/mathjax"
mkdir -p "$DEST/mathjax"

src=$work/mathjax/package
cp "$src/package.json" "$src/LICENSE" "$src/es5/tex-mml-chtml.js" "$DEST/mathjax/"
mkdir -p "$DEST/mathjax/output/chtml/fonts" "$DEST/mathjax/input/tex"
cp -r "$src/es5/output/chtml/fonts/woff-v2" "$DEST/mathjax/output/chtml/fonts/"
cp -r "$src/es5/input/tex/extensions" "$DEST/mathjax/input/tex/"

du -sh "$DEST/mathjax"
