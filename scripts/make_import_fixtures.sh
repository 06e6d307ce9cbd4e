#!/usr/bin/env bash
# Makes the fixtures of `tare import` (tests/data/import/<tool>/) with the REAL tools: hyperfine,
# Google Benchmark, JMH, `go test -bench`, Criterion, pytest-benchmark and pyperf. Each tool
# measures a few tiny benchmarks briefly, so the files stay small (a few KB to 100 KB).
#
# Run by hand, not in CI (the fixtures are committed; tests/import_*.rs read them):
#   scripts/make_import_fixtures.sh [TOOL...]     # default: all tools
# Installs what is missing (apt-get, pip, Maven, cargo). Takes about 10 minutes on the 2-core
# development machine, most of it building Criterion and resolving JMH's Maven artifacts once.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/tests/data/import
WORK=${TARE_FIXTURE_WORK:-/var/tmp/tare-import-fixtures}
mkdir -p "$OUT" "$WORK"
TOOLS=("$@")
[ ${#TOOLS[@]} -eq 0 ] && TOOLS=(hyperfine gbench jmh go criterion pytest-benchmark pyperf)

say() { echo "make_import_fixtures: $*" >&2; }

hyperfine_fixtures() {
    command -v hyperfine >/dev/null || apt-get install -y hyperfine
    local d=$OUT/hyperfine
    mkdir -p "$d"
    # Two commands and a parameter scan, no shell (-N), with warm-up runs.
    hyperfine -N --warmup 2 --runs 12 --style none \
        --export-json "$d/two-commands.json" 'gzip -1 -c /etc/services' 'gzip -9 -c /etc/services'
    hyperfine -N --runs 8 --style none -P level 1 3 \
        --export-json "$d/parameter-scan.json" 'gzip -{level} -c /etc/services'
    # A failing command whose failures are ignored: the exit codes are kept.
    hyperfine -N --runs 5 --style none -i --export-json "$d/ignored-failure.json" 'false'
}

gbench_fixtures() {
    dpkg -s libbenchmark-dev >/dev/null 2>&1 || apt-get install -y libbenchmark-dev
    local w=$WORK/gbench d=$OUT/gbench
    mkdir -p "$w" "$d"
    cat >"$w/bench.cc" <<'EOF'
#include <benchmark/benchmark.h>
#include <numeric>
#include <string>
#include <vector>

static void BM_StringCopy(benchmark::State& state) {
  std::string x(state.range(0), 'x');
  for (auto _ : state) {
    std::string copy(x);
    benchmark::DoNotOptimize(copy);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * state.range(0));
}
BENCHMARK(BM_StringCopy)->Arg(64)->Arg(4096);

static void BM_Accumulate(benchmark::State& state) {
  std::vector<int> v(1000, 1);
  for (auto _ : state) {
    int s = std::accumulate(v.begin(), v.end(), 0);
    benchmark::DoNotOptimize(s);
  }
  state.counters["elements"] = benchmark::Counter(double(v.size()));
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(v.size()));
}
BENCHMARK(BM_Accumulate)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
EOF
    g++ -O2 -o "$w/bench" "$w/bench.cc" -lbenchmark -lpthread
    # Three repetitions each: every repetition is kept, plus the tool's mean/median/stddev/cv.
    "$w/bench" --benchmark_repetitions=3 --benchmark_min_time=0.02 \
        --benchmark_out="$d/repetitions.json" --benchmark_out_format=json >/dev/null
    # One repetition only, and only the aggregates in another (what CI setups often keep).
    "$w/bench" --benchmark_min_time=0.02 --benchmark_out="$d/single.json" \
        --benchmark_out_format=json >/dev/null
    "$w/bench" --benchmark_repetitions=3 --benchmark_min_time=0.02 \
        --benchmark_report_aggregates_only=true \
        --benchmark_out="$d/aggregates-only.json" --benchmark_out_format=json >/dev/null
}

jmh_fixtures() {
    command -v mvn >/dev/null || apt-get install -y maven
    local w=$WORK/jmh d=$OUT/jmh
    mkdir -p "$w/src/main/java/tare" "$d"
    cat >"$w/pom.xml" <<'EOF'
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>tare</groupId>
  <artifactId>jmh-fixture</artifactId>
  <version>1</version>
  <properties>
    <jmh.version>1.37</jmh.version>
    <maven.compiler.source>17</maven.compiler.source>
    <maven.compiler.target>17</maven.compiler.target>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency><groupId>org.openjdk.jmh</groupId><artifactId>jmh-core</artifactId><version>${jmh.version}</version></dependency>
    <dependency><groupId>org.openjdk.jmh</groupId><artifactId>jmh-generator-annprocess</artifactId><version>${jmh.version}</version><scope>provided</scope></dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.11.0</version>
        <configuration>
          <annotationProcessorPaths>
            <path><groupId>org.openjdk.jmh</groupId><artifactId>jmh-generator-annprocess</artifactId><version>${jmh.version}</version></path>
          </annotationProcessorPaths>
        </configuration>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId><artifactId>maven-shade-plugin</artifactId><version>3.5.1</version>
        <executions><execution><phase>package</phase><goals><goal>shade</goal></goals>
          <configuration>
            <finalName>benchmarks</finalName>
            <transformers><transformer implementation="org.apache.maven.plugins.shade.resource.ManifestResourceTransformer"><mainClass>org.openjdk.jmh.Main</mainClass></transformer></transformers>
          </configuration>
        </execution></executions>
      </plugin>
    </plugins>
  </build>
</project>
EOF
    cat >"$w/src/main/java/tare/Sums.java" <<'EOF'
package tare;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;

@State(Scope.Thread)
public class Sums {
    @Param({"100", "1000"})
    public int size;

    private int[] data;

    @Setup
    public void setup() {
        data = new int[size];
        for (int i = 0; i < size; i++) data[i] = i;
    }

    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    public long loop() {
        long s = 0;
        for (int x : data) s += x;
        return s;
    }

    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.MILLISECONDS)
    public long stream() {
        return java.util.Arrays.stream(data).asLongStream().sum();
    }
}
EOF
    (cd "$w" && mvn -q -B package -DskipTests)
    # Two forks × three measurement iterations (after one warm-up iteration) per benchmark.
    java -jar "$w/target/benchmarks.jar" -f 2 -wi 1 -i 3 -w 100ms -r 100ms \
        -rf json -rff "$d/avgt-thrpt.json" >/dev/null
    # Sample mode keeps a histogram of single-operation times per iteration; single shot keeps
    # one time per iteration; -prof gc adds secondary metrics per iteration.
    java -jar "$w/target/benchmarks.jar" 'Sums.loop' -p size=100 -bm sample -tu us -f 1 -wi 1 \
        -i 2 -w 100ms -r 100ms -rf json -rff "$d/sample.json" >/dev/null
    java -jar "$w/target/benchmarks.jar" 'Sums.loop' -p size=1000 -bm ss -f 1 -wi 2 -i 5 \
        -prof gc -rf json -rff "$d/single-shot-gc.json" >/dev/null
}

go_fixtures() {
    local w=$WORK/gobench d=$OUT/go
    mkdir -p "$w" "$d"
    cat >"$w/go.mod" <<'EOF'
module example.com/tarefixture

go 1.21
EOF
    cat >"$w/sum_test.go" <<'EOF'
package tarefixture

import (
	"fmt"
	"strings"
	"testing"
)

var sink int

func BenchmarkSum(b *testing.B) {
	data := make([]int, 1000)
	for i := 0; i < b.N; i++ {
		s := 0
		for _, x := range data {
			s += x
		}
		sink = s
	}
}

func BenchmarkJoin(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			parts := make([]string, n)
			for i := range parts {
				parts[i] = "ab"
			}
			b.SetBytes(int64(2 * n))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sink += len(strings.Join(parts, ","))
			}
		})
	}
}
EOF
    # -count 4: four lines (runs) per benchmark, each with its own b.N. Twice, as before and
    # after a change would be (the README compares the two).
    (cd "$w" && go test -run '^$' -bench . -benchtime 20ms -count 4) >"$d/bench.txt"
    (cd "$w" && go test -run '^$' -bench . -benchtime 20ms -count 4) >"$d/bench-again.txt"
}

criterion_fixtures() {
    local w=$WORK/criterion d=$OUT/criterion
    mkdir -p "$w/benches" "$d"
    cat >"$w/Cargo.toml" <<'EOF'
[package]
name = "tare-criterion-fixture"
version = "0.1.0"
edition = "2021"

[dev-dependencies]
criterion = { version = "0.5", default-features = false, features = ["cargo_bench_support"] }

[[bench]]
name = "sums"
harness = false
EOF
    mkdir -p "$w/src" && echo "" >"$w/src/lib.rs"
    cat >"$w/benches/sums.rs" <<'EOF'
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;

fn sums(c: &mut Criterion) {
    c.bench_function("sum_100", |b| b.iter(|| (0..black_box(100u64)).sum::<u64>()));
    let mut g = c.benchmark_group("vec_sum");
    for n in [64usize, 1024] {
        let v: Vec<u64> = (0..n as u64).collect();
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &v, |b, v| {
            b.iter(|| black_box(v).iter().sum::<u64>())
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(300))
        .without_plots();
    targets = sums
}
criterion_main!(benches);
EOF
    # Twice: the second run also writes change/ (the comparison with the first), which
    # `tare import` reports as not mapped.
    (cd "$w" && cargo bench --bench sums -- --noplot >/dev/null && cargo bench --bench sums -- --noplot >/dev/null)
    rm -rf "$d/criterion"
    cp -r "$w/target/criterion" "$d/criterion"
    rm -rf "$d/criterion/report" "$d"/criterion/*/report "$d"/criterion/*/*/report
}

pytest_benchmark_fixtures() {
    python3 -c 'import pytest_benchmark' 2>/dev/null || pip3 install pytest-benchmark
    local w=$WORK/pytest-benchmark d=$OUT/pytest-benchmark
    mkdir -p "$w" "$d"
    cat >"$w/test_sums.py" <<'EOF'
import pytest


def test_sum_range(benchmark):
    benchmark(sum, range(1000))


@pytest.mark.parametrize("n", [10, 1000])
def test_join(benchmark, n):
    parts = ["ab"] * n
    benchmark.extra_info["parts"] = n
    benchmark(",".join, parts)


def test_pedantic(benchmark):
    benchmark.pedantic(sorted, args=(list(range(500, 0, -1)),), rounds=7, iterations=20, warmup_rounds=1)
EOF
    (cd "$w" && python3 -m pytest -q -p no:cacheprovider --benchmark-max-time=0.002 \
        --benchmark-min-time=0.00005 --benchmark-min-rounds=5 --benchmark-json="$d/bench.json" test_sums.py >/dev/null)
}

pyperf_fixtures() {
    python3 -c 'import pyperf' 2>/dev/null || pip3 install pyperf
    local d=$OUT/pyperf
    mkdir -p "$d"
    rm -f "$d"/*.json
    # Three worker processes × three values each (plus warm-ups and the calibration run).
    python3 -m pyperf timeit --processes 3 --values 3 --warmups 1 --min-time 0.01 \
        --name sum_range -o "$d/timeit.json" 'sum(range(1000))' >/dev/null
    # A suite of two benchmarks in one file.
    python3 -m pyperf timeit --processes 2 --values 2 --min-time 0.01 --name sorted \
        -o "$d/suite.json" 'sorted(range(300, 0, -1))' >/dev/null
    python3 -m pyperf timeit --processes 2 --values 2 --min-time 0.01 --name join \
        --append "$d/suite.json" '",".join(["ab"] * 100)' >/dev/null
    # pyperf's own summary (mean, median, min, max, counts), which the tests check against.
    for f in timeit suite; do
        python3 -m pyperf stats --quiet "$d/$f.json" >"$d/$f.stats.txt"
    done
}

for t in "${TOOLS[@]}"; do
    say "$t"
    case $t in
    hyperfine) hyperfine_fixtures ;;
    gbench) gbench_fixtures ;;
    jmh) jmh_fixtures ;;
    go) go_fixtures ;;
    criterion) criterion_fixtures ;;
    pytest-benchmark) pytest_benchmark_fixtures ;;
    pyperf) pyperf_fixtures ;;
    *) say "unknown tool $t (hyperfine gbench jmh go criterion pytest-benchmark pyperf)"; exit 2 ;;
    esac
done
say "fixtures in $OUT"
