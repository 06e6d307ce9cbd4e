#!/usr/bin/env bash
# Builds the Java blur worker in place (target/blur.jar, runnable with `java -jar`): installs the
# local client (clients/java) into the Maven repository, then packages the example with the
# client inside the jar. Idempotent; does nothing when the jar is newer than every source.
# --print-command builds if needed, then prints the absolute command that starts the worker
# (build messages go to stderr).
# Maven's local repository: $TARE_M2 if set (CI uses /var/cache/tare-ci/m2), else Maven's default.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
client="$(cd "$here/../../../../clients/java" && pwd)"
jar="$here/target/blur.jar"
for tool in java mvn; do
  if ! command -v "$tool" >/dev/null; then
    echo "build.sh: error: $tool is not installed; install a JDK 17+ and Maven (apt-get install openjdk-17-jdk-headless maven)" >&2
    exit 1
  fi
done
if [ ! -f "$jar" ] || [ -n "$(find "$here/src" "$here/pom.xml" "$client/src/main" "$client/pom.xml" -newer "$jar" -print -quit)" ]; then
  mvn_args=(-B -q -ntp -Dstyle.color=never)
  if [ -n "${TARE_M2:-}" ]; then mvn_args+=("-Dmaven.repo.local=$TARE_M2"); fi
  # Maven's messages go to stderr (stdout is the command line), without the bare colour resets
  # Debian's Maven prints even in batch mode.
  (cd "$client" && mvn "${mvn_args[@]}" -DskipTests install 2>&1 | sed 's/\x1b\[0m//g' >&2)
  (cd "$here" && mvn "${mvn_args[@]}" package 2>&1 | sed 's/\x1b\[0m//g' >&2)
fi
if [ "${1:-}" = "--print-command" ]; then
  echo "java -jar $jar"
fi
