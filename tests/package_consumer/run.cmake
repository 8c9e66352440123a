# Installs the lfcore build in BUILD_DIR to a scratch prefix, then configures,
# builds and runs the consumer project against it with find_package(lfcore),
# and, given C_COMPILER, builds and runs main.c with it and pkg-config
# (native builds only).
# LAUNCHER (optional, a ;-list) runs the consumer, e.g. under mpiexec.
# TOOLCHAIN (optional) cross-compiles the consumer; the scratch prefix is then
# a find root, since a cross toolchain limits find_package to those.
# CXX_COMPILER and CXX_FLAGS (optional): the lfcore build's, so that the
# consumer links the same C++ standard library (libc++ or libstdc++).
string(REPLACE "," ";" launcher "${LAUNCHER}") # passed with , for ; (ctest -D)
set(toolchain "")
if(TOOLCHAIN)
  set(toolchain "-DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN};-DCMAKE_FIND_ROOT_PATH=${WORK_DIR}/prefix")
elseif(CXX_COMPILER)
  set(toolchain "-DCMAKE_CXX_COMPILER=${CXX_COMPILER};-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
endif()

# Runs one command (its arguments), failing the test if it fails.
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package consumer: step failed (${rc}): ${ARGN}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR}/build) # configured afresh: the compiler may have changed
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
step(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
     -DCMAKE_BUILD_TYPE=Release ${toolchain})
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${launcher} ${WORK_DIR}/build/consumer)

# A C program through pkg-config, as an interpreter built without CMake
# would link lfcore. Native builds only: pkg-config here describes the host.
if(C_COMPILER AND NOT TOOLCHAIN)
  find_program(pkg_config pkg-config REQUIRED)
  file(GLOB_RECURSE pc_file "${WORK_DIR}/prefix/lfcore.pc")
  list(LENGTH pc_file found)
  if(NOT found EQUAL 1)
    message(FATAL_ERROR "package consumer: lfcore.pc not installed once under ${WORK_DIR}/prefix")
  endif()
  get_filename_component(pc_dir "${pc_file}" DIRECTORY)
  # pkg-config's answer to args, split into a list in out.
  function(pkg_config_query out)
    execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir} ${pkg_config} ${ARGN}
                    OUTPUT_VARIABLE answer OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "package consumer: pkg-config ${ARGN} failed (${rc})")
    endif()
    separate_arguments(answer UNIX_COMMAND "${answer}")
    set(${out} ${answer} PARENT_SCOPE)
  endfunction()
  pkg_config_query(flags --cflags --libs lfcore)
  pkg_config_query(libdir --variable=libdir lfcore)
  # The rpath finds a shared liblfcore in the scratch prefix at run time.
  step(${C_COMPILER} -std=c11 -Wall -Wextra -Werror ${SOURCE_DIR}/main.c -o ${WORK_DIR}/c_consumer
       ${flags} -Wl,-rpath,${libdir})
  step(${launcher} ${WORK_DIR}/c_consumer)
endif()
