/* Test program for `tare bias` (tests/bias_programs.rs): the same pointer-chasing loop as
 * stack_align.c, but the buffer is aligned to a cache line at run time and the loads never
 * straddle one, so its speed does not depend on where the stack starts. */
#define ALIGNED 1
#define ALIGN_OFFSET 0
#include "stack_align.c"
