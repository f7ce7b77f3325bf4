for (Py_ssize_t i = 0; i < n && status == 0; ++i)
  status = triton_kernel_eval(&kernel, x[i], y[i], &out[i]);
