# Cross-compiling lfcore for 64-bit Arm Linux with Debian's cross toolchain
# (g++-aarch64-linux-gnu); tests and examples run under qemu-user
# (qemu-aarch64), which CTest calls as the emulator. scripts/test-cross.sh uses it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(lfcore_aarch64_sysroot /usr/aarch64-linux-gnu)
# Libraries and headers only from the target's tree (and prefixes the caller
# adds, such as a cross-built GoogleTest); programs from the host.
list(APPEND CMAKE_FIND_ROOT_PATH ${lfcore_aarch64_sysroot})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L ${lfcore_aarch64_sysroot})
