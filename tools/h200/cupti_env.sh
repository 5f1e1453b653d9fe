# Sourced by the measure_*.sh scripts whose programs use CUPTI (cupti_kernels.cuh): sets
# nvcc, cupti_flags (include and library paths, rpath, and KREC, the newest kernel
# activity record the installed CUPTI declares).
nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
cuda=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
cupti_inc=$(dirname "$(find "$cuda" /usr/local/cuda* -name cupti.h 2>/dev/null | head -1)")
cupti_lib=$(dirname "$(find "$cuda" /usr/local/cuda* -name 'libcupti.so*' 2>/dev/null | head -1)")
krec=$(grep -rhoE 'CUpti_ActivityKernel[0-9]+;' "$cupti_inc" | tr -d ';' | sort -V | tail -1)
cupti_flags=(-DKREC="$krec" -I"$cupti_inc" -L"$cupti_lib" -Xlinker -rpath -Xlinker "$cupti_lib" -lcupti)
echo "nvcc $nvcc, CUPTI $cupti_inc ($krec)" >&2
