#section kernels
#kernel k_add : *, *, size :
KERNEL void k_add(GLOBAL_MEM float* a) {}

#section support_code
static int kernels_loaded = 1;
