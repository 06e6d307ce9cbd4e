#!/usr/bin/env bash
# The Java client's own tests (clients/java, JUnit 5 through Maven Surefire): a fake master drives
# worker JVMs over an inherited Unix socket (python3 puts it on fd 3) and over TARE_WORKER_PATH;
# then the blur example's jar is built with its build.sh and run standalone once. Installs a JDK,
# Maven and python3 when missing; Maven's downloads are cached in /var/cache/tare-ci/m2 (the
# first run fetches the plugins and JUnit, later runs work offline). Takes about 70 s here
# (2-core VM under load, warm cache), about 2 minutes with an empty Maven repository.
set -euo pipefail
cd "$(dirname "$0")/../.."
need=()
command -v javac >/dev/null || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need+=(maven)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  echo "45-clients-java: installing ${need[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
export TARE_M2=/var/cache/tare-ci/m2
mkdir -p "$TARE_M2"
echo "45-clients-java: $(javac -version 2>&1); mvn test in clients/java" >&2
(cd clients/java && timeout 600 mvn -B -ntp -Dstyle.color=never -Dmaven.repo.local="$TARE_M2" test)
echo "45-clients-java: building examples/kernels/blur/java and running it standalone" >&2
timeout 300 examples/kernels/blur/java/build.sh
cmd="$(examples/kernels/blur/java/build.sh --print-command)"
timeout 120 $cmd --filter blur -p size=64 --warmup 0.5
