#!/usr/bin/env bash
# Opens the sample pages (reports/sample/catalogue.html, the report, and review.html, the design
# review) in headless Chromium, fails on any console message a page logs (they have no script,
# so there should be none), takes a screenshot of each and fails unless it is far from blank.
# `.ci/run` runs this after the tests; the tests `the_sample_reports_are_current_with_their_
# scenarios` and `the_sample_review_is_current` keep the pages current.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-target/chromium}"
mkdir -p "$out"
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
for name in catalogue review; do
page="$PWD/reports/sample/$name.html"
# The flags keep Chromium off the network (this machine's is closed) and out of the sandbox
# (CI runs as root).
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --enable-logging=stderr --v=0 \
    --window-size=1400,2400 --screenshot="$out/$name.png" "file://$page" \
    2> "$out/chromium-$name.log" || { cat "$out/chromium-$name.log"; exit 1; }
if grep -E "CONSOLE|Uncaught|Failed to load resource|net::ERR" "$out/chromium-$name.log"; then
    echo "the sample page $name.html logged the lines above in Chromium" >&2
    exit 1
fi
python3 - "$out/$name.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w, h, depth, ctype = 8, b"", 0, 0, 0, 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
assert depth == 8 and ctype in (2, 6), f"unexpected PNG format {depth}/{ctype}"
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat)
stride = w * bpp
rows, prev, i = [], bytearray(stride), 0
for _ in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line))
    prev = line
counts = {}
for r in rows[::4]:
    for x in range(0, stride, bpp * 4):
        px = r[x:x + 3]
        counts[px] = counts.get(px, 0) + 1
total = sum(counts.values())
background = max(counts.values())
inked = 1 - background / total
print(f"screenshot {w}x{h}: {len(counts)} colours, {inked:.1%} of sampled pixels off the background")
assert len(counts) > 20 and inked > 0.05, "the screenshot is (nearly) blank"
PY

done
echo "chromium: the sample pages render with no console messages"
