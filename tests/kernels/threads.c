/* A worker on the C client for tare's test of threaded kernels: the same CPU-bound body (a
 * chain of integer multiply-adds, nothing shared) on 1 and on 2 threads (tare_set_threads).
 * On two idle cores both take the same time per loop; one after the other 2 threads would
 * take twice as long. */
#include <stdint.h>
#include "tare_worker.h"

static void spin(void *state) {
    (void)state;
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 20000; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    TARE_DO_NOT_OPTIMIZE(x);
}

int main(int argc, char **argv) {
    tare_kernel *k = tare_register("spin/1", "20000 multiply-adds, one thread");
    tare_on_body(k, spin);
    k = tare_register("spin/2", "20000 multiply-adds on each of 2 threads");
    tare_set_threads(k, 2);
    tare_on_body(k, spin);
    return tare_main(argc, argv);
}
