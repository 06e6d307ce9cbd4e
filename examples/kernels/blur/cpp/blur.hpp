// The blur example kernel's arithmetic in C++ (docs/protocol.md), shared by the tare worker
// (blur.cpp) and the Google Benchmark program of bench/kernel_overhead.sh, so both time the
// same code.
#ifndef TARE_EXAMPLE_BLUR_HPP
#define TARE_EXAMPLE_BLUR_HPP

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

class Blur {
  public:
    Blur(long long size, long long radius) {
        if (size < 1 || radius < 1 || size > 65536 || radius > 65536)
            throw std::invalid_argument("blur: size=" + std::to_string(size) + " and radius=" +
                                        std::to_string(radius) + " must be integers in 1..65536");
        n_ = static_cast<int>(size);
        r_ = static_cast<int>(radius);
        std::size_t cells = static_cast<std::size_t>(n_) * n_;
        img_.resize(cells);
        tmp_.resize(cells);
        out_.resize(cells);
        for (int y = 0; y < n_; y++)
            for (int x = 0; x < n_; x++) img_[static_cast<std::size_t>(y) * n_ + x] = ((x * 7 + y * 13) % 256) / 255.0;
        double s = r_ / 2.0, sum = 0;
        for (int i = -r_; i <= r_; i++) {
            w_.push_back(std::exp(-static_cast<double>(i * i) / (2 * s * s)));
            sum += w_.back();
        }
        for (double& v : w_) v /= sum;
    }
    // One loop of the kernel: horizontal then vertical pass, edges clamped.
    void once() {
        const int n = n_, r = r_;
        const double* w = w_.data();
        for (int y = 0; y < n; y++) {
            const double* row = &img_[static_cast<std::size_t>(y) * n];
            double* t = &tmp_[static_cast<std::size_t>(y) * n];
            for (int x = 0; x < n; x++) {
                double acc = 0;
                for (int i = -r; i <= r; i++) acc += w[i + r] * row[clamp(x + i, 0, n - 1)];
                t[x] = acc;
            }
        }
        for (int y = 0; y < n; y++) {
            double* o = &out_[static_cast<std::size_t>(y) * n];
            for (int x = 0; x < n; x++) {
                double acc = 0;
                for (int i = -r; i <= r; i++) acc += w[i + r] * tmp_[static_cast<std::size_t>(clamp(y + i, 0, n - 1)) * n + x];
                o[x] = acc;
            }
        }
    }
    double checksum() const {
        double sum = 0;
        for (double v : out_) sum += v;
        return sum;
    }
    double bytes_per_loop() const { return static_cast<double>(n_) * n_ * 8; }
    const double* out() const { return out_.data(); }

  private:
    static int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
    int n_, r_;
    std::vector<double> img_, tmp_, out_, w_;
};

#endif
