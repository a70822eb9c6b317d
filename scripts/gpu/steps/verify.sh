# shellcheck shell=bash
# verify: every kernel of the package (the package step's, or one built from
# RECORDS) against the CPU reference through its C API, cubins then PTX, then
# the cubins under memcheck -> verify_package.txt, memcheck.txt. VERIFY_MAX
# (17000000 elements; the CLI's own default is 134217728), VERIFY_TIMEOUT
# (150 s), MEMCHECK_TIMEOUT (150 s, problems up to 1100000 elements),
# MEMCHECK_PTX=1: the PTX under memcheck too.
need_bins fusekit
need_package
step "every kernel of the package against the CPU reference, cubins, then PTX"
{ package_verify "$pkg" verify "${VERIFY_TIMEOUT:-150}" "${VERIFY_MAX:-17000000}"
  FUSEKIT_PTX_ONLY=1 package_verify "$pkg" "verify ptx" "${VERIFY_TIMEOUT:-150}" 1100000; } >"$out/verify_package.txt" 2>&1
grep "checks" "$out/verify_package.txt" | tee -a "$log"
while read -r line; do note "${line% rc=*}" "${line##* rc=}"; done < <(grep -o "^verify.* rc=[0-9]*" "$out/verify_package.txt")
step memcheck of the package up to 1 M elements
{ package_verify "$pkg" memcheck "${MEMCHECK_TIMEOUT:-150}" 1100000 "${memcheck[@]}"
  if [ -n "${MEMCHECK_PTX:-}" ]; then
    FUSEKIT_PTX_ONLY=1 package_verify "$pkg" "memcheck ptx" "${MEMCHECK_TIMEOUT:-150}" 1100000 "${memcheck[@]}"
  fi; } >"$out/memcheck.txt" 2>&1
grep "ERROR SUMMARY\|checks" "$out/memcheck.txt" | tee -a "$log"
while read -r line; do note "${line% rc=*}" "${line##* rc=}"; done < <(grep -o "^memcheck.* rc=[0-9]*" "$out/memcheck.txt")
finish
