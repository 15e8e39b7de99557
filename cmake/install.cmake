# Installation and packaging of pytracekit: the library (with its export
# control), the headers, the shipped plugins, the `pytracekit` command, the
# pkg-config file, the CMake package and the docs.
#
# Included from the top-level CMakeLists.txt after lib/, plugins/, tools/ and
# python/, so the targets they define exist here.
#
# Layout under the prefix:
#   include/pytracekit/*.h
#   lib/libpytracekit.so -> .so.MAJOR -> .so.MAJOR.MINOR.PATCH  (or .a)
#   lib/pytracekit/plugins/NAME.so
#   bin/pytracekit
#   lib/pkgconfig/pytracekit.pc
#   lib/cmake/pytracekit/pytracekit{Config,ConfigVersion,Targets*}.cmake
#   share/doc/pytracekit/  guides, examples, html/ (API reference, if built)
include(CMakePackageConfigHelpers)

set(PTK_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/pytracekit"
  CACHE STRING "Where the CMake package files go (relative to the prefix)")
set(PTK_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
  CACHE STRING "Where pytracekit.pc goes (relative to the prefix)")

# Where libpython lives, so installed binaries find the one they were built
# against (a system libpython of the same soname may be on the loader's path).
set(_ptk_python_libdir "")
if(Python3_LIBRARY_DIRS)
  list(GET Python3_LIBRARY_DIRS 0 _ptk_python_libdir)
endif()

# The interpreter itself, not a launcher in front of it (a pyenv shim, say):
# the pkg-config and CMake files name it for consumers.
execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import sys; print(sys.executable)"
  OUTPUT_VARIABLE PTK_PYTHON_REAL_EXECUTABLE OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _ptk_rc)
if(NOT _ptk_rc EQUAL 0 OR NOT EXISTS "${PTK_PYTHON_REAL_EXECUTABLE}")
  set(PTK_PYTHON_REAL_EXECUTABLE "${Python3_EXECUTABLE}")
endif()

# ---- the library ----------------------------------------------------------

if(NOT TARGET pytracekit)
  message(FATAL_ERROR "cmake/install.cmake: the pytracekit library target is not defined")
endif()
if(NOT TARGET pytracekit::pytracekit)
  add_library(pytracekit::pytracekit ALIAS pytracekit)
endif()

get_target_property(_ptk_lib_type pytracekit TYPE)
set_target_properties(pytracekit PROPERTIES
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  EXPORT_NAME pytracekit
  INSTALL_RPATH_USE_LINK_PATH TRUE)

if(_ptk_lib_type STREQUAL "SHARED_LIBRARY")
  # Only the documented API leaves the library: hidden visibility by default
  # (CMAKE_C_VISIBILITY_PRESET), PTK_API on each public function, and this
  # version script, which also makes every other symbol local.
  set(_ptk_map "${PROJECT_SOURCE_DIR}/lib/pytracekit.map")
  target_link_options(pytracekit PRIVATE "LINKER:--version-script=${_ptk_map}")
  set_property(TARGET pytracekit APPEND PROPERTY LINK_DEPENDS "${_ptk_map}")
endif()

install(TARGETS pytracekit EXPORT pytracekitTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    COMPONENT runtime NAMELINK_COMPONENT devel
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/pytracekit
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT devel
  FILES_MATCHING PATTERN "*.h")

# ---- the command ----------------------------------------------------------

if(TARGET pytracekit_cli)
  # tools/CMakeLists.txt installs the command (with its RUNPATH); it is also
  # exported here, as pytracekit::cli, for projects that run it.
  set_target_properties(pytracekit_cli PROPERTIES EXPORT_NAME cli)
  install(TARGETS pytracekit_cli EXPORT pytracekitTargets
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()

# ---- the Python package ---------------------------------------------------

# lib/pythonX.Y/site-packages/pytracekit/: the extension finds libpytracekit
# three levels up (its INSTALL_RPATH, python/CMakeLists.txt).
set(PTK_INSTALL_PYTHONDIR
  "${CMAKE_INSTALL_LIBDIR}/python${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}/site-packages"
  CACHE STRING "Where the pytracekit Python package goes (relative to the prefix)")
if(TARGET ptk_python)
  install(TARGETS ptk_python
    LIBRARY DESTINATION ${PTK_INSTALL_PYTHONDIR}/pytracekit COMPONENT python)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/pytracekit/
    DESTINATION ${PTK_INSTALL_PYTHONDIR}/pytracekit COMPONENT python
    FILES_MATCHING PATTERN "*.py" PATTERN "*.pyi" PATTERN "py.typed"
    PATTERN "__pycache__" EXCLUDE)
  install(FILES ${PROJECT_SOURCE_DIR}/tools/pytracekit-coverage.py
    DESTINATION ${PTK_INSTALL_PYTHONDIR}/pytracekit COMPONENT python
    RENAME _coverage_format.py)
  # its static analysis, which completes deferred data (reports=false)
  install(FILES ${PROJECT_SOURCE_DIR}/plugins/coverage/analysis.py
    DESTINATION ${PTK_INSTALL_PYTHONDIR}/pytracekit COMPONENT python
    RENAME _coverage_analysis.py)
  install(FILES ${PROJECT_SOURCE_DIR}/plugins/lines/lines_format.py
    DESTINATION ${PTK_INSTALL_PYTHONDIR}/pytracekit COMPONENT python
    RENAME _lines_format.py)
  # Its bytecode (__pycache__), as pip and the distributions' packages
  # install it: a package under a prefix its users cannot write to would
  # otherwise compile every module in every process (`import pytracekit`:
  # 22 ms against 12 ms on 3.13). The paths the bytecode names are the
  # installed ones, without DESTDIR. Off for the wheel (tools/pep517):
  # pip compiles what it installs.
  option(PTK_INSTALL_BYTECOMPILE "Byte-compile the installed Python package" ON)
  if(PTK_INSTALL_BYTECOMPILE)
    install(CODE "
      set(_ptk_pkg \"${PTK_INSTALL_PYTHONDIR}/pytracekit\")
      if(NOT IS_ABSOLUTE \"\${_ptk_pkg}\")
        set(_ptk_pkg \"\${CMAKE_INSTALL_PREFIX}/\${_ptk_pkg}\")
      endif()
      set(_ptk_strip)
      if(NOT \"\$ENV{DESTDIR}\" STREQUAL \"\")
        set(_ptk_strip -s \"\$ENV{DESTDIR}\" -p /)
      endif()
      message(STATUS \"Byte-compiling: \$ENV{DESTDIR}\${_ptk_pkg}\")
      execute_process(COMMAND \"${Python3_EXECUTABLE}\" -m compileall -q \${_ptk_strip}
                              \"\$ENV{DESTDIR}\${_ptk_pkg}\"
                      RESULT_VARIABLE _ptk_rc)
      if(NOT _ptk_rc EQUAL 0)
        message(FATAL_ERROR \"byte-compiling \$ENV{DESTDIR}\${_ptk_pkg} failed\")
      endif()" COMPONENT python)
  endif()
endif()

# Where the code that looks for plugins is installed, relative to the
# prefix: the library (lib/), or with a static library the command (bin/)
# and the Python extension (site-packages/pytracekit/). lib/session/loader.c finds
# the prefix by removing that tail from its own directory and searches
# only <prefix>/<plugin dir> (never a path that climbs out of the prefix).
foreach(_d LIBDIR BINDIR PYTHONDIR PLUGINDIR)
  if(_d STREQUAL "PYTHONDIR")
    set(_full "${CMAKE_INSTALL_PREFIX}/${PTK_INSTALL_PYTHONDIR}/pytracekit")
  elseif(_d STREQUAL "PLUGINDIR")
    set(_full "${CMAKE_INSTALL_PREFIX}/${PTK_INSTALL_PLUGINDIR}")
  else()
    set(_full "${CMAKE_INSTALL_FULL_${_d}}")
  endif()
  file(RELATIVE_PATH _rel "${CMAKE_INSTALL_PREFIX}" "${_full}")
  target_compile_definitions(pytracekit PRIVATE PTK_REL_${_d}="${_rel}")
endforeach()

# Shipped plugins install themselves (plugins/CMakeLists.txt,
# ${PTK_INSTALL_PLUGINDIR}); they link nothing of ours and need no RPATH.

# ---- pkg-config -----------------------------------------------------------

file(RELATIVE_PATH PTK_PC_PREFIX_FROM_PCDIR
  "${CMAKE_INSTALL_PREFIX}/${PTK_INSTALL_PKGCONFIGDIR}" "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" PTK_PC_PREFIX_FROM_PCDIR "${PTK_PC_PREFIX_FROM_PCDIR}")
if(PTK_PC_PREFIX_FROM_PCDIR STREQUAL "")
  set(PTK_PC_PREFIX_FROM_PCDIR ".")
endif()

# Python's include directory goes straight into Cflags: a `Requires:
# python-3.X-embed` would fail wherever PKG_CONFIG_PATH lacks the Python's
# own pkgconfig directory (pyenv, conda, a custom build).
set(PTK_PC_PYTHON_CFLAGS "")
foreach(_d IN LISTS Python3_INCLUDE_DIRS)
  string(APPEND PTK_PC_PYTHON_CFLAGS " -I${_d}")
endforeach()
string(STRIP "${PTK_PC_PYTHON_CFLAGS}" PTK_PC_PYTHON_CFLAGS)
list(GET Python3_INCLUDE_DIRS 0 PTK_PC_PYTHON_INCLUDEDIR)
set(PTK_PC_PYTHON_LIBDIR "${_ptk_python_libdir}")

# A static libpytracekit needs its own dependencies on the link line; a shared
# one carries them. libpython is never listed: an extension module gets
# Python's symbols from the interpreter that loads it, and an embedding
# program links libpython itself (python3-config --embed --ldflags).
set(PTK_PC_LIBS_PRIVATE " ${CMAKE_DL_LIBS} -lpthread")
string(REGEX REPLACE " dl( |$)" " -ldl\\1" PTK_PC_LIBS_PRIVATE "${PTK_PC_LIBS_PRIVATE}")
if(_ptk_lib_type STREQUAL "STATIC_LIBRARY")
  set(PTK_PC_LIBS_EXTRA "${PTK_PC_LIBS_PRIVATE}")
else()
  set(PTK_PC_LIBS_EXTRA "")
endif()

configure_file(${PROJECT_SOURCE_DIR}/pytracekit.pc.in
  ${PROJECT_BINARY_DIR}/pytracekit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/pytracekit.pc
  DESTINATION ${PTK_INSTALL_PKGCONFIGDIR} COMPONENT devel)

# ---- CMake package --------------------------------------------------------

# What the exported library target needs from FindPython3: the component
# whose imported target lib/ links (Python3::Python is Development.Embed,
# Python3::Module is Development.Module).
get_target_property(_ptk_links pytracekit LINK_LIBRARIES)
get_target_property(_ptk_ilinks pytracekit INTERFACE_LINK_LIBRARIES)
set(PTK_CONFIG_PYTHON_COMPONENTS "Development.Module")
if("Python3::Python" IN_LIST _ptk_links OR "Python3::Python" IN_LIST _ptk_ilinks)
  set(PTK_CONFIG_PYTHON_COMPONENTS "Development.Module Development.Embed")
endif()

install(EXPORT pytracekitTargets
  NAMESPACE pytracekit::
  DESTINATION ${PTK_INSTALL_CMAKEDIR}
  COMPONENT devel)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/pytracekitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/pytracekitConfig.cmake
  INSTALL_DESTINATION ${PTK_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR PTK_INSTALL_PLUGINDIR)
# 0.x releases are only compatible within one minor version (the soname
# follows the major, which stays 0 until the API is declared stable).
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_ptk_compat SameMinorVersion)
else()
  set(_ptk_compat SameMajorVersion)
endif()
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/pytracekitConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY ${_ptk_compat})
install(FILES
  ${PROJECT_BINARY_DIR}/pytracekitConfig.cmake
  ${PROJECT_BINARY_DIR}/pytracekitConfigVersion.cmake
  DESTINATION ${PTK_INSTALL_CMAKEDIR} COMPONENT devel)

# ---- docs and examples ----------------------------------------------------

file(GLOB _ptk_guides ${PROJECT_SOURCE_DIR}/docs/*.md)
if(_ptk_guides)
  install(FILES ${_ptk_guides} DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc)
endif()
if(EXISTS ${PROJECT_SOURCE_DIR}/examples)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/
    DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT doc
    PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)
endif()
# The API reference is installed when it has been built (`cmake --build . -t
# docs`, or with PTK_BUILD_DOCS=ON as part of every build).
install(DIRECTORY ${PROJECT_BINARY_DIR}/docs/html
  DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc OPTIONAL)
