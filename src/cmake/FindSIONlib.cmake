# Find SIONlib (MPI flavour) through its `sionconfig` script, which knows the right flags and libraries
# for the MPI it was built with. Looks under $SIONLIB_ROOT/bin (CMake or environment variable) first,
# then on PATH. Sets SIONLIB_FOUND, SIONLIB_INCLUDE_DIRS, SIONLIB_LIBRARIES, SIONLIB_DEFINITIONS,
# SIONLIB_VERSION, SIONLIB_SIONCONFIG.
set(_sion_hints)
if(SIONLIB_ROOT)
  list(APPEND _sion_hints "${SIONLIB_ROOT}/bin")
endif()
if(DEFINED ENV{SIONLIB_ROOT})
  list(APPEND _sion_hints "$ENV{SIONLIB_ROOT}/bin")
endif()
find_program(SIONLIB_SIONCONFIG sionconfig HINTS ${_sion_hints})

set(SIONLIB_FOUND FALSE)
if(SIONLIB_SIONCONFIG)
  execute_process(COMMAND ${SIONLIB_SIONCONFIG} --cflags --mpi --c --64
                  OUTPUT_VARIABLE _sion_cflags RESULT_VARIABLE _sion_rc1 OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${SIONLIB_SIONCONFIG} --libs --mpi --c --64
                  OUTPUT_VARIABLE _sion_libs RESULT_VARIABLE _sion_rc2 OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${SIONLIB_SIONCONFIG} --version
                  OUTPUT_VARIABLE _sion_version ERROR_VARIABLE _sion_version OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_sion_rc1 EQUAL 0 AND _sion_rc2 EQUAL 0 AND _sion_cflags AND _sion_libs)
    separate_arguments(_sion_cflags UNIX_COMMAND "${_sion_cflags}")
    separate_arguments(_sion_libs UNIX_COMMAND "${_sion_libs}")
    set(SIONLIB_INCLUDE_DIRS)
    set(SIONLIB_DEFINITIONS)
    foreach(_f IN LISTS _sion_cflags)
      if(_f MATCHES "^-I(.+)")
        list(APPEND SIONLIB_INCLUDE_DIRS "${CMAKE_MATCH_1}")
      elseif(_f MATCHES "^-D(.+)")
        list(APPEND SIONLIB_DEFINITIONS "${CMAKE_MATCH_1}")
      endif()
    endforeach()
    # -L/-l flags are kept in order: SIONlib's static libraries depend on each other left to right.
    set(SIONLIB_LIBRARIES ${_sion_libs})
    string(REGEX MATCH "[0-9]+\\.[0-9]+\\.[0-9]+" SIONLIB_VERSION "${_sion_version}")
    set(SIONLIB_FOUND TRUE)
  endif()
endif()

if(SIONLIB_FOUND)
  message(STATUS "Found SIONlib ${SIONLIB_VERSION}: ${SIONLIB_SIONCONFIG}")
elseif(SIONlib_FIND_REQUIRED)
  message(FATAL_ERROR "SIONlib not found: put sionconfig on PATH or set SIONLIB_ROOT")
endif()
mark_as_advanced(SIONLIB_SIONCONFIG)
