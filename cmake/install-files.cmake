# Run by `cmake --install` (cmake/install.cmake), with CMAKE_INSTALL_PREFIX
# the prefix of this installation. file(INSTALL) adds $ENV{DESTDIR} itself;
# the paths written into files do not carry it (they are where the files
# will be when the staged tree is in place).
set(prefix "${CMAKE_INSTALL_PREFIX}")
if(prefix STREQUAL "/usr")
  set(etc "/etc")
else()
  set(etc "${prefix}/etc")
endif()

# the unit, naming the installed binary and config
set(OSP_PREFIX "${prefix}")
set(OSP_SYSCONFDIR "${etc}")
configure_file("${OSP_SOURCE_DIR}/dist/ospreyd.service.in" "${OSP_BINARY_DIR}/ospreyd.service"
               @ONLY)
file(INSTALL "${OSP_BINARY_DIR}/ospreyd.service" DESTINATION "${prefix}/lib/systemd/system")

# an example config, never over an operator's own
if(EXISTS "$ENV{DESTDIR}${etc}/osprey/ospreyd.json")
  message(STATUS "Kept: $ENV{DESTDIR}${etc}/osprey/ospreyd.json")
else()
  file(INSTALL "${OSP_SOURCE_DIR}/dist/ospreyd.json" DESTINATION "${etc}/osprey")
endif()

# the catalog's model files that are in the cache (scripts/fetch-assets.sh),
# each with its labels file, as `osprey models --json` of this build lists them
execute_process(COMMAND "${OSP_BINARY_DIR}/bin/osprey" models --json
                OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OSP_BINARY_DIR}/bin/osprey models --json failed (${rc})")
endif()
string(REPLACE "\n" ";" listing "${listing}")
set(files "")
set(cache_models "")
foreach(line IN LISTS listing)
  if(line MATCHES "\"path\": \"([^\"]*)\"")
    set(path "${CMAKE_MATCH_1}")
    get_filename_component(cache_models "${path}" DIRECTORY)
    if(line MATCHES "\"present\": true")
      list(APPEND files "${path}")
      string(REGEX REPLACE "\\.onnx$" ".labels" labels "${path}")
      if(EXISTS "${labels}")
        list(APPEND files "${labels}")
      endif()
    endif()
  endif()
endforeach()
# the speech model of `osprey listen` and ospreyd's streams, not in the catalog
if(cache_models AND EXISTS "${cache_models}/silero_vad_v5.onnx")
  list(APPEND files "${cache_models}/silero_vad_v5.onnx")
endif()
list(REMOVE_DUPLICATES files)
if(files)
  file(INSTALL ${files} DESTINATION "${prefix}/share/osprey/models")
else()
  message(STATUS "No catalog model in the cache: run scripts/fetch-assets.sh before make install")
endif()
