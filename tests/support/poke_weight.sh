# Sourced by end-to-end test scripts that need a corrupt checkpoint:
# poke_bf16 FILE TENSOR ELEMENT HEX overwrites element ELEMENT (row-major) of
# the BF16 tensor TENSOR in the safetensors FILE with the bit pattern HEX
# (e.g. 7fc0, a NaN), in place. The tensor's place comes from the file's own
# header (8-byte little-endian length, then JSON with data_offsets).
poke_bf16() {
  local file=$1 tensor=$2 element=$3 hex=$4
  local header begin
  header=$(od -An -tu8 -N8 "$file" | tr -d ' ')
  begin=$(head -c $((8 + header)) "$file" | tail -c "$header" |
    grep -o "\"$tensor\":{[^}]*}" | grep '"dtype":"BF16"' |
    sed 's/.*"data_offsets":\[\([0-9]*\),.*/\1/')
  [ -n "$begin" ] || { echo "poke_bf16: no BF16 tensor $tensor in $file"; return 1; }
  printf "\\x${hex:2:2}\\x${hex:0:2}" |
    dd of="$file" bs=1 seek=$((8 + header + begin + 2 * element)) conv=notrunc status=none
}
