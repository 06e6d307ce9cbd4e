#!/usr/bin/env bash
# Builds the Java blur worker in place (target/blur.jar, runnable with `java -jar`): installs the
# local client (clients/java) into the Maven repository, then packages the example with the
# client inside the jar. Idempotent; does nothing when the jar is newer than every source.
# --print-command prints the absolute command that starts the worker.
# Maven's local repository: $TARE_M2 if set (CI uses /var/cache/tare-ci/m2), else Maven's default.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
client="$(cd "$here/../../../../clients/java" && pwd)"
jar="$here/target/blur.jar"
if [ "${1:-}" = "--print-command" ]; then
  echo "java -jar $jar"
  exit 0
fi
for tool in java mvn; do
  if ! command -v "$tool" >/dev/null; then
    echo "build.sh: error: $tool is not installed; install a JDK 17+ and Maven (apt-get install openjdk-17-jdk-headless maven)" >&2
    exit 1
  fi
done
if [ -f "$jar" ] && [ -z "$(find "$here/src" "$here/pom.xml" "$client/src/main" "$client/pom.xml" -newer "$jar" -print -quit)" ]; then
  exit 0
fi
mvn_args=(-B -q -ntp -Dstyle.color=never)
if [ -n "${TARE_M2:-}" ]; then mvn_args+=("-Dmaven.repo.local=$TARE_M2"); fi
(cd "$client" && mvn "${mvn_args[@]}" -DskipTests install)
(cd "$here" && mvn "${mvn_args[@]}" package)
