# Sourced by the tests of tools/gpu/gpu_checks.sh' stages: a build folder,
# $1/build, that the stages take for one prepare has made (a bundle with an
# empty env.sh, a build verdict of OK), its binaries links to the real ones
# given after $1 (tandem, tandem-loadtest, tandem-bench: their own names).
# Empties $1/build first; exports TANDEM_GPU_BUILD and TANDEM_BUNDLE.
stage_build() {
  local work=$1
  shift
  rm -rf "$work/build"
  mkdir -p "$work/build/logs" "$work/bundle"
  echo "build: OK, made by the stage's test" >"$work/build/logs/verdicts.txt"
  : >"$work/bundle/env.sh"
  local binary
  for binary in "$@"; do ln -s "$(realpath "$binary")" "$work/build/$(basename "$binary")"; done
  export TANDEM_GPU_BUILD=$work/build TANDEM_BUNDLE=$work/bundle
}
