#!/usr/bin/env bash
# Runs bytelens's GPU benchmark (`cargo xtask bench gpu`) on a machine with
# a real GPU, such as an NVIDIA H200 machine that may lack a Vulkan loader,
# a compiler or registry access.
#
# Prepare on a build machine with `cargo xtask bench gpu --prepare-device`:
# it builds the benchmark into target/device/gpu-bench and downloads the
# loader packages (libvulkan1, libegl1, libglvnd0) into target/device/debs.
# Carry target/device along, then run this script from the repository root.
# Where target/device/gpu-bench is missing it runs `cargo xtask bench gpu`.
# The texture goal is in the Rust benchmark; gpu.load's (a Python script)
# runs where python3 imports bytelens and safetensors.
#
# Environment: BYTELENS_BENCH_MIB (256), BYTELENS_BENCH_REPS (7),
# BYTELENS_FORCE_CARRIED_LOADER=1 to use the carried loader even where the
# system has one (to test this script). Results: target/bench/gpu.{csv,svg}.
set -euo pipefail
cd "$(dirname "$0")/.."
device=target/device

# 1. A Vulkan loader: the system's, else the carried packages unpacked into
#    target/device/root (dpkg -x, nothing installed system-wide).
if [[ -n "${BYTELENS_FORCE_CARRIED_LOADER:-}" ]] || ! ldconfig -p | grep -q 'libvulkan\.so\.1'; then
    shopt -s nullglob
    debs=("$device"/debs/*.deb)
    if (( ${#debs[@]} == 0 )); then
        echo "no Vulkan loader here and none carried in $device/debs" >&2
        echo "(run 'cargo xtask bench gpu --prepare-device' where apt works)" >&2
        exit 1
    fi
    for deb in "${debs[@]}"; do
        dpkg -x "$deb" "$device/root"
    done
    libdir="$PWD/$device/root/usr/lib/x86_64-linux-gnu"
    export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "using the carried Vulkan loader in $libdir"
fi

# 2. The NVIDIA driver's Vulkan ICD, where the loader would not find it.
if [[ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]]; then
    for icd in /usr/share/vulkan/icd.d/nvidia_icd.json \
               /etc/vulkan/icd.d/nvidia_icd.json \
               /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; do
        if [[ -f "$icd" ]]; then
            export VK_DRIVER_FILES="$icd"
            echo "using the Vulkan driver $icd"
            break
        fi
    done
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current --format=csv || true

# 3. The benchmark.
export NODEVICE_SELECT=1
export BYTELENS_BENCH_DIR="${BYTELENS_BENCH_DIR:-$PWD/target/bench}"
if [[ -x "$device/gpu-bench" ]]; then
    "$device/gpu-bench"
    # gpu.load's benchmark needs the Python package: a wheel from
    # target/wheels installed with numpy and safetensors.
    if python3 -c "import bytelens.gpu, safetensors" 2>/dev/null; then
        cd native/benches && exec python3 python_gpu.py
    fi
    echo "gpu.load's benchmark skipped: no python3 with bytelens and safetensors here"
    exit 0
fi
exec cargo xtask bench gpu
