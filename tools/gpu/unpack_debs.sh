#!/usr/bin/env bash
# Unpacks the .deb files bundle_debs.sh downloaded into OUT/root (never into
# /) and puts env.sh beside it: the half of bundle_debs.sh that also runs on
# the GPU machine, where only the .deb files travel (35 MB; unpacked they
# are ten times that).
#
#   tools/gpu/unpack_debs.sh DEBS OUT
#
# Uses dpkg-deb where there is one, else ar and tar (a .deb is an ar
# archive holding data.tar.*), so the GPU machine needs no Debian tools.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 DEBS OUT   (DEBS: folder of .deb files; OUT: folder for root/ and env.sh)" >&2
  exit 2
fi
debs=$(cd "$1" && pwd)
out=$(mkdir -p "$2/root" && cd "$2" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)

shopt -s nullglob
files=("$debs"/*.deb)
[[ ${#files[@]} -gt 0 ]] || { echo "unpack_debs: no .deb files in $debs" >&2; exit 1; }
for deb in "${files[@]}"; do
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$deb" "$out/root"
    continue
  fi
  member=$(ar t "$deb" | grep '^data\.tar')
  case $member in
    *.xz) ar p "$deb" "$member" | tar -xJ -C "$out/root" ;;
    *.zst) ar p "$deb" "$member" | zstd -dc | tar -x -C "$out/root" ;;
    *.gz) ar p "$deb" "$member" | tar -xz -C "$out/root" ;;
    *) ar p "$deb" "$member" | tar -x -C "$out/root" ;;
  esac
done

# Debian ships some links as absolute paths (/usr/lib/...); inside the
# bundle they must point into root/, relatively, so that OUT can move.
while IFS= read -r link; do
  target=$(readlink "$link")
  if [[ -e $out/root$target ]]; then ln -sfnr "$out/root$target" "$link"; fi
done < <(find "$out/root" -type l -lname '/*')

# Debian's Open MPI reaches mpicxx and mpirun through update-alternatives
# (/usr/bin/mpicxx -> /etc/alternatives/...), which unpacking does not
# run: give the bundle the plain names.
for tool in mpicc mpicxx mpirun mpiexec; do
  if [[ -e $out/root/usr/bin/$tool.openmpi && ! -e $out/root/usr/bin/$tool ]]; then
    ln -s "$tool.openmpi" "$out/root/usr/bin/$tool"
  fi
done

cp "$repo/tools/gpu/env.sh" "$out/env.sh"
echo "unpack_debs: ${#files[@]} packages unpacked into $out/root; in the shell that builds or runs Tandem:"
echo "  source $out/env.sh"
