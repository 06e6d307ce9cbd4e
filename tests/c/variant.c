/* Test program for `tare run --build` (tests/setup_build.rs): built with -DVARIANT=N, it
 * appends N to the file named by $PROBE_OUT, so the test can see which variant each run ran. */
#include <stdio.h>
#include <stdlib.h>

#ifndef VARIANT
#define VARIANT 0
#endif

int main(void) {
    const char *out = getenv("PROBE_OUT");
    if (!out) return 2;
    FILE *f = fopen(out, "a");
    if (!f) return 3;
    fprintf(f, "%d\n", VARIANT);
    return fclose(f) == 0 ? 0 : 4;
}
