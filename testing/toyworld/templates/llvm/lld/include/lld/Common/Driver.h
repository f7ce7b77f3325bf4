#ifndef LLD_COMMON_DRIVER_H
#define LLD_COMMON_DRIVER_H

/* Links the objects of one kernel into a code object; returns 0 on success. */
int lldLinkKernel(const char *name);

#endif
