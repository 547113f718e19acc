# CMakeLists.txt writes _build_config.py into the build (never into the source tree).
CUDA_MAJOR: int
