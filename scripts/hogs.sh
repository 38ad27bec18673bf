#!/bin/sh
# Runs a command beside CPU hogs: busy loops that each keep one core at 100% for as long as the
# command runs, then are killed, also when the command fails or this script is interrupted. Exits
# with the command's status. The project's rule: the suite passes beside two of them
# (docs/reliability.md, "The suite beside two CPU hogs").
#
#   scripts/hogs.sh npx vitest run                   # the whole suite beside two hogs
#   HOGS=3 scripts/hogs.sh npx vitest run test/integration/talk.browser.test.ts
set -u
count="${HOGS:-2}"
if [ "$#" -eq 0 ]; then
  echo "usage: scripts/hogs.sh <command> [args...]   (HOGS=n hogs, default 2)" >&2
  exit 2
fi
hogs=""
command_pid=""
stop() {
  # Only what this script started, by id.
  [ -n "$hogs" ] && kill $hogs 2>/dev/null
  hogs=""
}
interrupted() {
  [ -n "$command_pid" ] && kill "$command_pid" 2>/dev/null && wait "$command_pid"
  stop
  exit 130
}
trap interrupted INT TERM
i=0
while [ "$i" -lt "$count" ]; do
  node -e 'for (;;) {}' &
  hogs="$hogs $!"
  i=$((i + 1))
done
echo "hogs.sh: $count CPU hogs running (pids$hogs)" >&2
# In the background and waited for, so that a signal reaches the trap at once.
"$@" &
command_pid=$!
wait "$command_pid"
status=$?
command_pid=""
stop
echo "hogs.sh: hogs stopped; the command exited $status" >&2
exit "$status"
