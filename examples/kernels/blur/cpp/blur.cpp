// The blur example kernel and the empty kernel on the C++ client. Build: ./build.sh.
#include <cstdint>

#include "blur.hpp"
#include "tare_worker.hpp"

int main(int argc, char** argv) {
    tare::kernel("blur", "separable Gaussian blur of a generated size x size image")
        .param("size", 256, "image side in pixels")
        .param("radius", 3, "kernel radius in pixels")
        .setup([](tare::context& c) {
            Blur b(c.param_int("size"), c.param_int("radius"));
            c.bytes_per_loop(b.bytes_per_loop());
            return b;
        })
        .run([](Blur& b, tare::context& c, std::uint64_t loops) {
            for (std::uint64_t i = 0; i < loops; i++) {
                b.once();
                tare::do_not_optimize(b.out());
                tare::clobber_memory();
            }
            c.metric("checksum", b.checksum());
        });
    tare::kernel("empty", "does nothing: the per-iteration overhead").run([](tare::context&, std::uint64_t loops) {
        for (std::uint64_t i = 0; i < loops; i++) tare::do_not_optimize(i);
    });
    return tare::main(argc, argv);
}
