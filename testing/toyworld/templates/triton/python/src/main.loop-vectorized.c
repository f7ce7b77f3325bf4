/* Four lanes at a time, then the tail. */
Py_ssize_t i = 0;
for (; i + 4 <= n && status == 0; i += 4)
  for (int lane = 0; lane < 4 && status == 0; ++lane)
    status = triton_kernel_eval(&kernel, x[i + lane], y[i + lane], &out[i + lane]);
for (; @TAIL@ && status == 0; ++i)
  status = triton_kernel_eval(&kernel, x[i], y[i], &out[i]);
