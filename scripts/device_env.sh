# Sourced by the GPU session scripts: unpacks the carried Debian runtime
# packages into a scratch folder (never into /), puts them and CUDA on the
# library path, and defines $out, $bin, $log and step().
out=${OUT:?set OUT to a results folder}
deps=/tmp/fusekit-deps
mkdir -p "$deps"
for d in .device/debs/*.deb; do dpkg -x "$d" "$deps"; done
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:$deps/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
bin=.device/bin
log="$out/log.txt"
step() { echo "=== $* ($(date -u +%T))" | tee -a "$log"; }
