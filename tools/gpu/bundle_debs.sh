#!/usr/bin/env bash
# Downloads the Debian 12 packages Tandem builds and runs against and
# unpacks them under one folder, for a GPU machine that has a compiler,
# CMake, the CUDA toolkit and driver, but not our libraries (docs/gpu.md).
#
#   tools/gpu/bundle_debs.sh OUT
#
# Run it on a Debian 12 machine of the GPU machine's architecture, with
# network and apt lists (apt-get update). It needs no root and installs
# nothing: apt-get download fetches the .deb files into OUT/debs, and
# unpack_debs.sh unpacks them into OUT/root (never into /). OUT/env.sh sets the
# variables that point a build and a run at OUT/root; OUT can be copied
# anywhere (env.sh finds itself).
#
# Which packages: the library part of the Makefile's DEBIAN_PACKAGES (names
# starting with lib or ending in -dev, and openmpi-bin for mpirun), then,
# recursively, their Depends and Pre-Depends, followed only into library
# packages (lib*, *-dev, and *-common: the data files libraries read) and
# never into the C library or GCC's runtime, which the GPU machine's own
# compiler provides (shadowing them would break that compiler's programs).
# Tools (g++, cmake, python3, nodejs, prometheus, curl...) are not bundled.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUT   (OUT: folder for debs/, root/ and env.sh)" >&2
  exit 2
fi
out=$(mkdir -p "$1" && cd "$1" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)

# The Makefile's list (a variable continued over lines with backslashes).
makefile_packages=$(sed -n '/^DEBIAN_PACKAGES :=/,/[^\\]$/p' "$repo/Makefile" |
  sed 's/^DEBIAN_PACKAGES :=//; s/\\$//')
roots=()
for package in $makefile_packages; do
  [[ $package == lib* || $package == *-dev || $package == openmpi-bin ]] && roots+=("$package")
done

# Not followed: what the host's C library and compiler provide, and a few
# base-system libraries every Linux has under the same soname. With the
# bundle on LD_LIBRARY_PATH an older Debian copy of those would shadow the
# host's own for every program (ssh, which mpirun starts, uses libssl).
# libhwloc-plugins: optional plugins that hwloc looks for under /usr only;
# they would drag in X11 and libxml2 for nothing.
host_provided='^(libc6|libc6-dev|libc-dev-bin|libcrypt1|libcrypt-dev|linux-libc-dev|gcc-[0-9]+-base|libgcc-s1|libgcc-[0-9]+-dev|libstdc\+\+6|libstdc\+\+-[0-9]+-dev|libgomp1|libatomic1|libitm1|libasan[0-9]+|liblsan0|libtsan[0-9]+|libubsan1|libhwasan0|libcc1-0)$'
base_system='^(libssl3|libudev1|libuuid1|liblzma5|libbsd0|libmd0|libhwloc-plugins)$'
wanted() {
  [[ $1 == lib* || $1 == *-dev || $1 == *-common ]] &&
    ! [[ $1 =~ $host_provided || $1 =~ $base_system ]]
}

# Breadth-first over the dependency graph. Virtual packages (<name>) and
# alternatives that are not libraries (gfortran | fortran-compiler) are
# not followed.
declare -A seen=()
queue=("${roots[@]}")
packages=()
while [[ ${#queue[@]} -gt 0 ]]; do
  package=${queue[0]}
  queue=("${queue[@]:1}")
  [[ -n ${seen[$package]:-} ]] && continue
  seen[$package]=1
  packages+=("$package")
  while read -r dependency; do
    if wanted "$dependency" && [[ -z ${seen[$dependency]:-} ]]; then queue+=("$dependency"); fi
  done < <(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
             --no-replaces --no-enhances "$package" |
           awk '$1 ~ /^\|?(Pre)?Depends:$/ && $2 !~ /^</ { sub(/:.*/, "", $2); print $2 }')
done
echo "bundle_debs: ${#packages[@]} packages: ${packages[*]}"

mkdir -p "$out/debs"
(cd "$out/debs" && apt-get download "${packages[@]}")
"$repo/tools/gpu/unpack_debs.sh" "$out/debs" "$out"
