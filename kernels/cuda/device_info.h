// What CUDA devices this process can see. Compiled only when nvcc is present
// (TANDEM_HAVE_CUDA); safe to call on a machine with no GPU or no driver.
#pragma once

#include <string>

namespace tandem::cuda {

// Number of usable CUDA devices; 0 when there is no driver or no device.
int device_count();
// "NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)" for device `index`.
std::string device_description(int index);
// Peak DRAM (HBM) bandwidth of device `index` in bytes/s: two transfers per
// memory clock over the whole bus. 0 if the driver does not say.
double peak_memory_bandwidth(int index);

}  // namespace tandem::cuda
