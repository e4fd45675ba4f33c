# make install (docs/operations.md): the two binaries with the ONNX Runtime
# they were built against, the catalog's model files from the cache, the
# systemd unit and its system user, an example config, and the docs.
# Everything lands under the prefix given to `cmake --install --prefix`
# (DESTDIR honoured); the binaries find the library and the models relative
# to themselves, so the tree works wherever it is installed or unpacked.
set_target_properties(osprey ospreyd PROPERTIES INSTALL_RPATH "$ORIGIN/../lib/osprey")
install(TARGETS osprey ospreyd RUNTIME DESTINATION bin)
# the library and its providers; a service cannot read it from a home cache
file(GLOB _ort_libs ${ORT_LIBDIR}/libonnxruntime*.so*)
install(FILES ${_ort_libs} DESTINATION lib/osprey)
install(FILES ${CMAKE_SOURCE_DIR}/dist/osprey.sysusers DESTINATION lib/sysusers.d
        RENAME osprey.conf)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION share/doc/osprey
        FILES_MATCHING PATTERN "*.md")
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION share/doc/osprey)
# what depends on the prefix known only at install time, and what is
# copied only when present
install(CODE "set(OSP_SOURCE_DIR \"${CMAKE_SOURCE_DIR}\")
set(OSP_BINARY_DIR \"${CMAKE_BINARY_DIR}\")")
install(SCRIPT ${CMAKE_SOURCE_DIR}/cmake/install-files.cmake)
