#!/usr/bin/env bash
# The README's test command as a newcomer meets it: a fresh clone, a fresh empty HOME, and two
# CPU burners at nice 0 keeping both cores busy. Prints the wall time and the load average.
#
#   benchmarks/suite_on_busy_cores.sh CLONE VENV [PYTEST ARGS...]
#   benchmarks/suite_on_busy_cores.sh /tmp/fresh-clone .venv -m "not slow" --durations=30
#
# The burners are this script's own children and end with it; pytest's output goes to stdout.
set -u
clone=$(cd "$1" && pwd) venv=$(cd "$2" && pwd)
shift 2
home=$(mktemp -d)
nice -n 0 sh -c 'while :; do :; done' &
burner1=$!
nice -n 0 sh -c 'while :; do :; done' &
burner2=$!
trap 'kill "$burner1" "$burner2"; rm -rf "$home"' EXIT
echo "start $(date -Is) load $(cat /proc/loadavg)"
start=$(date +%s.%N)
(
  cd "$clone" &&
    env -u XDG_CONFIG_HOME -u XDG_CACHE_HOME -u XDG_DATA_HOME -u XDG_STATE_HOME HOME="$home" \
      "$venv/bin/python" -m pytest -p no:cacheprovider "$@"
)
status=$?
end=$(date +%s.%N)
echo "end $(date -Is) load $(cat /proc/loadavg) exit $status wall $(echo "$end - $start" | bc) s"
exit "$status"
