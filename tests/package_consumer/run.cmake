# Installs the lfcore build in BUILD_DIR to a scratch prefix, then configures,
# builds and runs the consumer project against it with find_package(lfcore).
# LAUNCHER (optional, a ;-list) runs the consumer, e.g. under mpiexec.
# TOOLCHAIN (optional) cross-compiles the consumer; the scratch prefix is then
# a find root, since a cross toolchain limits find_package to those.
string(REPLACE "," ";" launcher "${LAUNCHER}") # passed with , for ; (ctest -D)
set(cross "")
if(TOOLCHAIN)
  set(cross ";-DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN};-DCMAKE_FIND_ROOT_PATH=${WORK_DIR}/prefix")
endif()
foreach(step
    "${CMAKE_COMMAND};--install;${BUILD_DIR};--prefix;${WORK_DIR}/prefix"
    "${CMAKE_COMMAND};-S;${SOURCE_DIR};-B;${WORK_DIR}/build;-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix;-DCMAKE_BUILD_TYPE=Release${cross}"
    "${CMAKE_COMMAND};--build;${WORK_DIR}/build"
    "${launcher};${WORK_DIR}/build/consumer")
  execute_process(COMMAND ${step} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package consumer: step failed (${rc}): ${step}")
  endif()
endforeach()
