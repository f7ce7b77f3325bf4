#include "triton.h"

int64_t triton_next_power_of_2(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p <<= 1;
  return p;
}
