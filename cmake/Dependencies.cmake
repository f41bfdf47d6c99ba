# Every dependency comes from a Debian package (scripts/install-deps installs them).
find_package(PkgConfig REQUIRED)
# Debian ships systemc.pc but no CMake package file.
pkg_check_modules(SystemC REQUIRED IMPORTED_TARGET GLOBAL systemc)
# Debian's libsystemc 2.3.4 is built as C++17: a C++20 translation unit must say so or it fails to link
# (undefined sc_api_version_2_3_4_cxx202002L). Put it on the imported target so every user gets it.
set_property(TARGET PkgConfig::SystemC APPEND PROPERTY INTERFACE_COMPILE_DEFINITIONS SC_CPLUSPLUS=201703L)
# libsystemc.so references sc_main (its own main calls it); our programs have their own main, so every
# user of SystemC gets a weak stub.
set_property(TARGET PkgConfig::SystemC APPEND PROPERTY INTERFACE_SOURCES ${CMAKE_CURRENT_LIST_DIR}/sc_main_stub.cpp)
add_library(SystemC::systemc ALIAS PkgConfig::SystemC)

find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)
find_package(Threads REQUIRED)

# wafer_library(NAME folder-target LINKS deps... [EXCLUDE subdir]): one library per folder, sources are
# every .cpp below the folder (but EXCLUDEd sub-folders); an INTERFACE library while the folder has none.
function(wafer_library name)
  cmake_parse_arguments(A "" "" "LINKS;EXCLUDE" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(ex IN LISTS A_EXCLUDE)
    list(FILTER srcs EXCLUDE REGEX "^${CMAKE_CURRENT_SOURCE_DIR}/${ex}/")
  endforeach()
  if(srcs)
    add_library(wafer_${name} STATIC ${srcs})
    target_link_libraries(wafer_${name} PUBLIC ${A_LINKS})
  else()
    add_library(wafer_${name} INTERFACE)
    target_link_libraries(wafer_${name} INTERFACE ${A_LINKS})
  endif()
  add_library(wafer::${name} ALIAS wafer_${name})
endfunction()
