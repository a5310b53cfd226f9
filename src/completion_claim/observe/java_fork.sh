#!/bin/sh
# The observer's wrapper of a Maven test JVM (Surefire's and Failsafe's `jvm`): Maven starts it
# as `<this> <java's arguments>`. The JVM, and every process the tests start, runs in a mount
# namespace of its own where the report folders of every module of the run are read-only:
# Maven writes the reports, from what the JVM told it, and nothing the code under test starts
# can rewrite one afterwards. It also runs in a PID namespace of its own, so what the tests
# leave behind ends with the JVM. CLAIM_FORK_WORK names the run's work tree; Maven's
# JAVA_HOME the JVM.
set -eu
java=${JAVA_HOME:?the test JVM needs JAVA_HOME}/bin/java
set -- -- "$java" "$@"
# One path a line (the POMs are the operator's: protected paths, as the trusted ref has them).
newline='
'
IFS=$newline
for pom in $(find "${CLAIM_FORK_WORK:?}" -name pom.xml -type f -not -path '*/target/*'); do
    for folder in "${pom%/pom.xml}/target/surefire-reports" "${pom%/pom.xml}/target/failsafe-reports"; do
        mkdir -p "$folder"
        set -- --ro-bind "$folder" "$folder" "$@"
    done
done
# Maven's own process, which the JVM watches (Surefire's ping), stays in sight: /proc is kept.
exec bwrap --dev-bind / / --unshare-pid --die-with-parent "$@"
