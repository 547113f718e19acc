# Sets CUDA_CORE_CUDA_INCLUDE, CUDA_CORE_CUDA_VERSION and CUDA_CORE_CUDA_PROFILER_INCLUDE (where
# cudaProfiler.h lies: CUDA_CORE_CUDA_INCLUDE, but for the CUDA 12 wheels); needs Python_EXECUTABLE. Included by
# CMakeLists.txt; also runs alone, as tests/test_find_cuda_headers.py does:
#   cmake -DPython_EXECUTABLE=python3 -P cmake/cuda_headers.cmake
#
# tools/find_cuda_headers.py chooses the headers. A CUDA_HOME toolkit of the cuda-bindings
# major, at its minor or newer, is used; an older one (or another major) is passed over, with a
# warning, for the nvidia-cuda-runtime / nvidia-cuda-profiler-api wheels in the build environment,
# which are pinned to the cuda-bindings minor. Policy and messages: docs/install.rst, CUDA_HOME.
execute_process(
  COMMAND "${Python_EXECUTABLE}" "${CMAKE_CURRENT_LIST_DIR}/../tools/find_cuda_headers.py"
  OUTPUT_VARIABLE _headers_out
  OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_VARIABLE _headers_msg
  ERROR_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _headers_rc)
if(NOT _headers_rc EQUAL 0)
  message(FATAL_ERROR "${_headers_msg}")
endif()
if(NOT _headers_msg STREQUAL "")
  message(WARNING "${_headers_msg}")
endif()
string(REPLACE "\n" ";" _headers_out "${_headers_out}")
list(GET _headers_out 0 CUDA_CORE_CUDA_INCLUDE)
list(GET _headers_out 1 CUDA_CORE_CUDA_VERSION)
list(GET _headers_out 2 CUDA_CORE_CUDA_PROFILER_INCLUDE)
message(STATUS "cuda_core: CUDA ${CUDA_CORE_CUDA_VERSION} headers from ${CUDA_CORE_CUDA_INCLUDE}")
