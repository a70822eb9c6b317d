# shellcheck shell=bash
# copybw: device-to-device copy bandwidth (bench/copy_bandwidth, median of 50
# copies) -> copy.jsonl. COPY_MIB: MiB copied, space-separated (default one
# copy of 1 GiB); a copy moves twice its size (read + write), so the 64 M-element
# kernels' traffic is COPY_MIB="128 192 256 384 512 1024".
need_bins copy_bandwidth
step copy bandwidth
# shellcheck disable=SC2086
copies ${COPY_MIB:-}
finish
