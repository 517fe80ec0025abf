# What "make install" (cmake --install) puts where; docs/deploy.md lists it.
#
# Paths are relative to the prefix chosen at install time
# (cmake --install BUILD --prefix P, or make install PREFIX=P), so one build
# tree installs anywhere. The files that name installed paths inside them
# (the pkg-config file, the systemd unit) are written at install time by
# cmake/install-files.cmake for that prefix. DESTDIR is honoured throughout.
include(GNUInstallDirs)

# The tools find libs3rdma next to themselves (PREFIX/bin -> PREFIX/lib), so
# an install under any prefix runs without ldconfig or LD_LIBRARY_PATH.
set_target_properties(s3rdma-tool s3rdma-bench PROPERTIES
                      INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

install(TARGETS s3rdmad RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
install(TARGETS s3rdma-tool s3rdma-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS s3rdma LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/s3rdma.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_SOURCE_DIR}/dist/completion/s3rdma.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME s3rdma)

# The sample configuration: every setting of this s3rdmad, with its help,
# written by the server itself (s3rdmad --print-config) so it cannot drift
# from the settings table. Only data_dir is in effect: the systemd unit's
# state directory. The environment is cleared so the builder's S3RDMA_*
# variables cannot leak into it.
set(S3R_SAMPLE_CONFIG ${CMAKE_BINARY_DIR}/dist/s3rdmad.yaml)
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/dist ${CMAKE_BINARY_DIR}/man)
add_custom_command(
  OUTPUT ${S3R_SAMPLE_CONFIG}
  COMMAND env -i ASAN_OPTIONS=detect_leaks=0 $<TARGET_FILE:s3rdmad>
          --data /var/lib/s3rdma --print-config > ${S3R_SAMPLE_CONFIG}.tmp
  COMMAND ${CMAKE_COMMAND} -E rename ${S3R_SAMPLE_CONFIG}.tmp ${S3R_SAMPLE_CONFIG}
  DEPENDS s3rdmad
  COMMENT "Writing the sample config dist/s3rdmad.yaml (s3rdmad --print-config)"
  VERBATIM)

# Man pages from each program's --help (help2man), with the sections --help
# does not have (files, environment, see also) from dist/man/NAME.h2m.
find_program(HELP2MAN help2man)
if(NOT HELP2MAN)
  message(FATAL_ERROR "help2man not found: it writes the man pages (scripts/install-deps "
                      "installs it)")
endif()
set(S3R_MAN_PAGES)
foreach(page s3rdmad:8:s3rdmad s3rdma:1:s3rdma-tool s3rdma-bench:1:s3rdma-bench)
  string(REPLACE ":" ";" parts ${page})
  list(GET parts 0 name)
  list(GET parts 1 section)
  list(GET parts 2 target)
  set(out ${CMAKE_BINARY_DIR}/man/${name}.${section})
  add_custom_command(
    OUTPUT ${out}
    COMMAND env ASAN_OPTIONS=detect_leaks=0 ${HELP2MAN} --no-info --section=${section}
            --version-string=${PROJECT_VERSION} --include=${CMAKE_SOURCE_DIR}/dist/man/${name}.h2m
            --output=${out} $<TARGET_FILE:${target}>
    DEPENDS ${target} ${CMAKE_SOURCE_DIR}/dist/man/${name}.h2m
    COMMENT "Writing the man page ${name}.${section} (help2man)"
    VERBATIM)
  list(APPEND S3R_MAN_PAGES ${out})
  install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()
add_custom_target(s3rdma-dist ALL DEPENDS ${S3R_SAMPLE_CONFIG} ${S3R_MAN_PAGES})

# Files that name installed paths: written for the prefix of this install.
configure_file(${CMAKE_SOURCE_DIR}/cmake/install-files.cmake.in
               ${CMAKE_BINARY_DIR}/install-files.cmake @ONLY)
install(SCRIPT ${CMAKE_BINARY_DIR}/install-files.cmake)
